/**
 * What the bus's own tests of real servers share (not exported): one temporary folder for the
 * servers a test file starts, the admin user every one of them knows, and one stop for all of
 * them — also those a failed test left running, each by its pid.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { EmbeddedServer } from "./embedded-server.js";
import { FULL_PERMISSIONS, hashPassword, type ServerUser } from "./server-config.js";

export const ADMIN = { user: "admin", password: "admin-pw" } as const;

export class TestServers {
  readonly root: string;
  /** The admin as a server's users list holds it: every permission. */
  readonly adminUser: ServerUser;
  readonly #started: EmbeddedServer[] = [];

  private constructor(root: string, adminUser: ServerUser) {
    this.root = root;
    this.adminUser = adminUser;
  }

  /** A new folder (`<prefix>…` in the system's temporary folder) and the admin's hash. */
  static async create(prefix: string): Promise<TestServers> {
    const root = await mkdtemp(join(tmpdir(), prefix));
    const passwordHash = await hashPassword(ADMIN.password);
    return new TestServers(root, { user: ADMIN.user, passwordHash, permissions: FULL_PERMISSIONS });
  }

  /** Keeps a started server, to be stopped by stopAll(); returns it. */
  track(server: EmbeddedServer): EmbeddedServer {
    this.#started.push(server);
    return server;
  }

  /** Stops every server kept, and removes the folder. */
  async stopAll(): Promise<void> {
    await Promise.all(this.#started.map((server) => server.stop({ graceMs: 1_000 })));
    await rm(this.root, { recursive: true, force: true });
  }
}

/** A raw NATS connection as `who` (what the server itself allows or refuses, no mesh helper). */
export function connectAs(
  server: { readonly url: string },
  who: { readonly user: string; readonly password: string },
  extra: { inboxPrefix?: string; reconnectTimeWait?: number; maxReconnectAttempts?: number } = {},
): Promise<NatsConnection> {
  return connect({
    servers: server.url,
    user: who.user,
    pass: who.password,
    timeout: 3_000,
    ...extra,
  });
}
