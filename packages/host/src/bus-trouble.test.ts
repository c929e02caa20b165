/**
 * The bus in trouble is not the build's failure. A host that connects while JetStream's API does
 * not answer (a server reloading its users, starting, or without JetStream for a while: `jetstream
 * is not enabled`, no responders, timeouts) waits for it and tries again; it never reports the
 * build failing for it, so the assigner never stops wanting a build because of the bus.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { ArtifactStore, KvBucket, MeshBus, ensureLayout } from "@mesh/bus";
import { EmbeddedServer } from "@mesh/bus/server";
import { freePort } from "@mesh/bus/testing";
import { Bucket, Principal, type Have } from "@mesh/protocol";
import { startBusWithoutJetStream } from "./bus-without-jetstream.js";
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
  const port = await freePort();
  // First a server on the port with the same users but no JetStream; then the real one.
  await using plain = await startBusWithoutJetStream(NODE, port);
  const root = await tempRoot();
  let server: EmbeddedServer | undefined;
  const logged: string[] = [];
  const host = await Host.create({
    node: NODE,
    root,
    credential: credentialFor(
      { url: plain.url },
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
    await plain.stop();
    server = await EmbeddedServer.start({
      dir: join(plain.dir, "js"),
      port,
      users: plain.users,
      serverName: "mesh-test",
      startTimeoutMs: 30_000,
      ref: false,
    });
    adminBus = await MeshBus.connect(
      credentialFor(server, plain.admin, { node: "admin", module: Principal.controller }),
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
    await server?.stop();
    await rm(root, { recursive: true, force: true });
  }
});
