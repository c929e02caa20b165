/**
 * Test support: a real nats-server on a free port with a host's user and an admin, but without
 * JetStream, so every JetStream request the host makes is refused as JetStream's API is while a
 * server reloads or starts. `users` and `port` let a test start the real server in its place.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import {
  FULL_PERMISSIONS,
  findServer,
  hashPassword,
  renderServerConfig,
  type ServerUser,
} from "@mesh/bus/server";
import { hostGrant } from "@mesh/core";
import { HOST_PASSWORD } from "./test-support.js";

export interface BusWithoutJetStream extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  /** The server's folder (remove it with `dispose`). */
  readonly dir: string;
  readonly users: readonly ServerUser[];
  readonly admin: { readonly user: string; readonly password: string };
  /** Ends the server (SIGTERM) and waits for it; harmless twice. */
  stop(): Promise<void>;
}

export async function startBusWithoutJetStream(
  node: string,
  port: number,
): Promise<BusWithoutJetStream> {
  const binary = await findServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-trouble-"));
  const admin = { user: "admin", password: randomBytes(12).toString("hex") };
  const users: ServerUser[] = [
    {
      user: admin.user,
      passwordHash: await hashPassword(admin.password),
      permissions: FULL_PERMISSIONS,
    },
    {
      user: `host-${node}`,
      passwordHash: await hashPassword(HOST_PASSWORD),
      permissions: hostGrant({ node }),
    },
  ];
  const config = join(dir, "plain.conf");
  const text = renderServerConfig({
    serverVersion: binary.version,
    serverName: "mesh-test",
    port,
    storeDir: join(dir, "store"),
    users,
  }).replace(/^jetstream \{[\s\S]*?^\}\n/m, "");
  assert.doesNotMatch(text, /jetstream/);
  await writeFile(config, text);
  const child = spawn(binary.path, ["-c", config], { stdio: "ignore" });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    users,
    admin,
    stop,
    async [Symbol.asyncDispose]() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
