/**
 * The test harness: a real nats-server per test file, on a free port, with a temporary store,
 * an admin user that may do everything (as the mesh's controller may) and the users a test
 * gives. Behaviour the bus enforces (permissions, reloads, watches) is tested against it, never
 * against a mock.
 *
 * ```ts
 * const server = await startTestServer({ users: [{ user: "a", password: "pw", permissions }] });
 * after(() => server.stop());
 * ```
 */
import { once } from "@mesh/kit";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ErrorCode,
  MeshError,
  isMeshError,
  type Credential,
  type Permissions,
} from "@mesh/protocol";
import { reapWithMe } from "./reaper.js";
import { EmbeddedServer, type ReloadOptions } from "../server/embedded-server.js";
import type { NatsServerBinary } from "../server/find-server.js";
import {
  FULL_PERMISSIONS,
  hashPassword,
  type ServerTls,
  type ServerUser,
} from "../server/server-config.js";

/** A user as a test writes it: the password in plain text (the harness hashes it). */
export interface TestUser {
  readonly user: string;
  readonly password: string;
  readonly permissions: Permissions;
}

export interface TestServerOptions {
  readonly users?: readonly TestUser[];
  readonly binary?: NatsServerBinary;
  /** Serve TLS with this certificate and key (clients must then connect with TLS). */
  readonly tls?: ServerTls;
  readonly startTimeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface TestServer extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** The temporary folder (config, log, store); removed by stop(). */
  readonly dir: string;
  /** The user with every permission, for setting up buckets and streams. */
  readonly admin: { readonly user: string; readonly password: string };
  /** The running server, for its log and state. */
  readonly server: EmbeddedServer;
  /** Replaces the test users (the admin always stays) and reloads the server. */
  setUsers(users: readonly TestUser[], options?: ReloadOptions): Promise<void>;
  /** Stops the server and removes its folder; calling it again is harmless. */
  stop(): Promise<void>;
}

export const ADMIN_USER = "admin";

const START_ATTEMPTS = 3;

/**
 * Starts a server for one test file. The port is found by {@link freePort}; if another process
 * takes it before the server binds, the start is tried again on a new port.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const { signal } = options;
  const admin = { user: ADMIN_USER, password: randomBytes(18).toString("base64url") };
  const dir = await mkdtemp(join(tmpdir(), "mesh-nats-"));
  try {
    const users = await hashUsers(admin, options.users ?? [], signal);
    let server: EmbeddedServer | undefined;
    for (let attempt = 1; server === undefined; attempt++) {
      const port = await freePort(signal === undefined ? {} : { signal });
      try {
        server = await EmbeddedServer.start({
          dir,
          port,
          users,
          serverName: "mesh-test",
          maxMemoryStore: 64 * 1024 * 1024,
          maxFileStore: 1024 * 1024 * 1024,
          startTimeoutMs: options.startTimeoutMs ?? 15_000,
          // A test file that forgets stop() must still end; the server is killed when it does.
          ref: false,
          ...(options.binary === undefined ? {} : { binary: options.binary }),
          ...(options.tls === undefined ? {} : { tls: options.tls }),
          ...(signal === undefined ? {} : { signal }),
        });
      } catch (error) {
        const portTaken =
          isMeshError(error, ErrorCode.SERVER_START_FAILED) &&
          /address already in use/.test(error.message);
        if (!portTaken || attempt >= START_ATTEMPTS) throw error;
      }
    }
    return testServer(server, dir, admin);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Stops the server and removes its folder once, also when the test process just ends. */
export function stopper(server: EmbeddedServer, dir: string): () => Promise<void> {
  // Also when this process is killed before its exit hooks run (a runner's timeout).
  reapWithMe(server.pid, { group: false, graceMs: 2_000, root: dir });
  const removeOnExit = (): void => {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Best effort: the process is ending.
    }
  };
  process.once("exit", removeOnExit);
  return once(async () => {
    await server.stop({ graceMs: 2_000 });
    await rm(dir, { recursive: true, force: true });
    process.removeListener("exit", removeOnExit);
  });
}

function testServer(
  server: EmbeddedServer,
  dir: string,
  admin: { readonly user: string; readonly password: string },
): TestServer {
  // A test file that never calls stop() still leaves no folder behind (the server itself is
  // killed by EmbeddedServer's own exit hook, which runs first).
  const stop = stopper(server, dir);
  return {
    url: server.url,
    port: server.port,
    pid: server.pid,
    dir,
    admin,
    server,
    async setUsers(users, options = {}) {
      await server.setUsers(await hashUsers(admin, users, options.signal), options);
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

// bcrypt takes ~60 ms a hash; tests reload the same users many times, so each is hashed once.
const hashes = new Map<string, Promise<string>>();

/** The admin (with every permission) and `users`, hashed once per password for the server's list. */
export async function hashUsers(
  admin: { readonly user: string; readonly password: string },
  users: readonly TestUser[],
  signal: AbortSignal | undefined,
): Promise<ServerUser[]> {
  const all: TestUser[] = [{ ...admin, permissions: FULL_PERMISSIONS }, ...users];
  return Promise.all(
    all.map(async ({ user, password, permissions }) => {
      const key = `${user}\u0000${password}`;
      let hash = hashes.get(key);
      if (hash === undefined) {
        hash = hashPassword(password, signal === undefined ? {} : { signal });
        hashes.set(key, hash);
        hash.catch(() => hashes.delete(key));
      }
      return { user, passwordHash: await hash, permissions };
    }),
  );
}

/**
 * A credential for one of the server's users (the admin, or a test user), speaking as
 * `<node>.<module>`: its inbox prefix is `_INBOX.<node>.<module>`, so the user's permissions
 * must allow subscribing there.
 */
export function credentialFor(
  server: { readonly url: string },
  who: TestLogin,
  as: { readonly node: string; readonly module: string },
): Credential {
  return {
    servers: [server.url],
    user: who.user,
    ...("password" in who ? { password: who.password } : { jwt: who.jwt, seed: who.seed }),
    node: as.node,
    module: as.module,
  };
}

/** A login a test server takes: a users-list user, or a signed user (accounts mode). */
export type TestLogin =
  | { readonly user: string; readonly password: string }
  | { readonly user: string; readonly jwt: string; readonly seed: string };

/**
 * A TCP port that was free a moment ago: the OS picks one for a listener on port 0, which is
 * closed again. Another process may take it before it is used; callers that bind it must be
 * ready to try again.
 */
export function freePort(
  options: { readonly host?: string; readonly signal?: AbortSignal } = {},
): Promise<number> {
  const { signal } = options;
  return new Promise((resolvePromise, reject) => {
    if (signal?.aborted === true) {
      reject(
        new MeshError(ErrorCode.ABORTED, "finding a free port was aborted", {
          cause: signal.reason,
        }),
      );
      return;
    }
    const listener = createServer();
    listener.unref();
    listener.once("error", reject);
    listener.listen({ host: options.host ?? "127.0.0.1", port: 0 }, () => {
      const address = listener.address();
      listener.close(() => {
        if (address !== null && typeof address === "object") resolvePromise(address.port);
        else
          reject(new MeshError(ErrorCode.INTERNAL, "the OS gave no port for a listener on port 0"));
      });
    });
  });
}

const TIME_FACTOR = (() => {
  const factor = Number(process.env["MESH_TEST_TIME_FACTOR"] ?? "4");
  return Number.isFinite(factor) && factor > 0 ? factor : 4;
})();

/**
 * A deadline as a test writes it (what it takes here), stretched by MESH_TEST_TIME_FACTOR
 * (default 4) for shared, loaded machines and CI: a deadline catches a hang, never a slow machine.
 */
export function stretched(ms: number): number {
  return ms * TIME_FACTOR;
}

/**
 * How long a refusal may take: the server answers a violation within milliseconds (docs/nats.md
 * §1.3), so a test that waits this long on one sees a hang as the deadline's TIMEOUT instead of
 * the code it expects.
 */
export const PROMPT_MS = 2_000;

/**
 * `promise`, or a TIMEOUT error naming `what` when it has not settled within `ms` (stretched).
 * Tests wait for events with this instead of sleeping.
 */
export function deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  const allowed = stretched(ms);
  return new Promise<T>((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      reject(new MeshError(ErrorCode.TIMEOUT, `${what} did not happen within ${allowed} ms`));
    }, allowed);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolvePromise(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
