/**
 * The bus in trouble is not the build's failure. A host that connects while JetStream's API does
 * not answer (a server reloading its users, starting, or without JetStream for a while: `jetstream
 * is not enabled`, no responders, timeouts) waits for it and tries again; it never reports the
 * build failing for it, so the assigner never stops wanting a build because of the bus.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ArtifactStore,
  EmbeddedServer,
  FULL_PERMISSIONS,
  KvBucket,
  MeshBus,
  ensureLayout,
  findServer,
  hashPassword,
  renderServerConfig,
  type ServerUser,
} from "@mesh/bus";
import { freePort } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import { Bucket, Principal, type Have } from "@mesh/protocol";
import { Host } from "./host.js";
import {
  HOST_PASSWORD,
  LONG_RUNNING,
  bundleOf,
  composedOf,
  credentialFor,
  loggingHost,
  processResource,
  tempRoot,
  waitFor,
} from "./test-support.js";

const NODE = "t1";

test("a host whose bus has no JetStream yet waits for it, never reports its build failing, and runs it once JetStream answers", async () => {
  const binary = await findServer();
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "mesh-trouble-"));
  const root = await tempRoot();
  const admin = { user: "admin", password: randomBytes(12).toString("hex") };
  const users: ServerUser[] = [
    {
      user: admin.user,
      passwordHash: await hashPassword(admin.password),
      permissions: FULL_PERMISSIONS,
    },
    {
      user: `host-${NODE}`,
      passwordHash: await hashPassword(HOST_PASSWORD),
      permissions: hostGrant({ node: NODE }),
    },
  ];
  // First a server on the port with the same users but no JetStream: every JetStream request
  // the host makes is refused as JetStream's API is while a server reloads or starts.
  const plainConfig = join(dir, "plain.conf");
  const text = renderServerConfig({
    serverVersion: binary.version,
    serverName: "mesh-test",
    port,
    storeDir: join(dir, "store"),
    users,
  }).replace(/^jetstream \{[\s\S]*?^\}\n/m, "");
  assert.doesNotMatch(text, /jetstream/);
  await writeFile(plainConfig, text);
  const plain = spawn(binary.path, ["-c", plainConfig], { stdio: "ignore" });
  const plainExited = new Promise<void>((r) => plain.once("exit", () => r()));
  let server: EmbeddedServer | undefined;
  const logged: string[] = [];
  const host = await Host.create({
    node: NODE,
    root,
    credential: credentialFor(
      { url: `nats://127.0.0.1:${port}` },
      { user: `host-${NODE}`, password: HOST_PASSWORD },
      { node: NODE, module: Principal.host },
    ),
    ...loggingHost(logged),
    heartbeatMs: 1_000,
  });
  const running = host.run({ signal: new AbortController().signal });
  let adminBus: MeshBus | undefined;
  try {
    await waitFor(
      "the host refused by a bus without JetStream",
      () => logged.some((l) => /cannot use the bus/.test(l)),
      60_000,
    );
    // Then the real server, JetStream on, on the same port: the host's connection comes back.
    if (plain.exitCode === null) process.kill(plain.pid as number, "SIGTERM");
    await plainExited;
    server = await EmbeddedServer.start({
      dir: join(dir, "js"),
      port,
      users,
      serverName: "mesh-test",
      startTimeoutMs: 30_000,
      ref: false,
    });
    adminBus = await MeshBus.connect(
      credentialFor(server, admin, { node: "admin", module: Principal.controller }),
    );
    await ensureLayout(adminBus);
    const artifacts = await ArtifactStore.open(adminBus);
    const digest = (await artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    const app = processResource({ root, module: "app", name: "p", digest });
    await (await KvBucket.open(adminBus, Bucket.composed)).put(NODE, composedOf(NODE, [app]));
    const have = await KvBucket.open(adminBus, Bucket.have);
    await waitFor(
      "app healthy once JetStream answers",
      async () => (await have.get(`${NODE}.app`))?.value.health === "healthy",
      120_000,
    );
    // Every report the host made of app (the bucket keeps 64): none says failing.
    const said: Have[] = [];
    for await (const event of have.watch({ key: `${NODE}.app`, include: "history" })) {
      if (event.type === "current") break;
      if (event.type === "put") said.push(event.value);
    }
    assert.ok(said.length > 0);
    assert.deepEqual(
      said.filter((h) => h.health === "failing"),
      [],
      "the bus's trouble was never reported as the build failing",
    );
  } finally {
    await host.stop();
    await running;
    await adminBus?.close();
    if (plain.exitCode === null && plain.signalCode === null)
      process.kill(plain.pid as number, "SIGKILL");
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  }
});
