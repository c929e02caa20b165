/**
 * The bus goes away for a while: what runs keeps running; when the bus is back the host reports
 * and follows changes again, without being restarted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { KvBucket } from "@mesh/bus";
import { EmbeddedServer, hashPassword, FULL_PERMISSIONS } from "@mesh/bus/server";
import { freePort } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import { Bucket } from "@mesh/protocol";
import { Host } from "./host.js";
import { isAlive } from "./proc.js";
import {
  HOST_PASSWORD,
  LONG_RUNNING,
  bundleOf,
  busAndRoot,
  loggingHost,
  processResource,
  tempRoot,
  waitFor,
} from "./test-support.js";

const NODE = "o1";
let revived: EmbeddedServer | undefined;
const fx = busAndRoot([NODE], {
  async ending() {
    await revived?.stop();
  },
});

test("processes keep running without the bus; when it returns the host reports and follows changes", async () => {
  const { bus, root } = fx;
  const logged: string[] = [];
  const host = await Host.create({
    node: NODE,
    root,
    credential: bus.hostCredential(NODE),
    ...loggingHost(logged),
    heartbeatMs: 300,
  });
  const running = host.run({ signal: new AbortController().signal });
  try {
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    const one = processResource({ root, module: "one", name: "p", digest });
    await bus.compose(NODE, [one]);
    const have = await KvBucket.open(bus.admin, Bucket.have);
    await waitFor(
      "one healthy",
      async () => (await have.get(`${NODE}.one`))?.value.health === "healthy",
    );
    const before = host.processes().get(one.id);
    assert.ok(before !== undefined);

    await bus.server.server.stop({ graceMs: 2_000 });
    await waitFor("the host noticing", () => logged.some((l) => l.startsWith("lost the bus")));
    assert.ok(await isAlive(before), "the process runs on without the bus");

    revived = await EmbeddedServer.start({
      dir: bus.server.dir,
      port: bus.server.port,
      serverName: "mesh-test",
      startTimeoutMs: 15_000,
      ref: false,
      users: [
        {
          user: bus.server.admin.user,
          passwordHash: await hashPassword(bus.server.admin.password),
          permissions: FULL_PERMISSIONS,
        },
        {
          user: `host-${NODE}`,
          passwordHash: await hashPassword(HOST_PASSWORD),
          permissions: hostGrant({ node: NODE }),
        },
      ],
    });
    await waitFor(
      "the host back on the bus",
      () => logged.some((l) => l.startsWith("the bus is back")),
      60_000,
    );
    // The outage is reported: how long in the log, when in the presence.
    assert.ok(
      logged.some((l) => /^the bus is back .*after \d+\.\d s away/.test(l)),
      logged.join("\n"),
    );
    const presence = await KvBucket.open(bus.admin, Bucket.presence);
    await waitFor(
      "the presence to carry the outage",
      async () => (await presence.get(NODE))?.value.lastOutage !== undefined,
    );

    const two = processResource({ root, module: "two", name: "p", digest });
    await waitFor(
      "the new composition written",
      async () => {
        await bus.compose(NODE, [one, two]);
        return true;
      },
      60_000,
    );
    await waitFor(
      "two healthy",
      async () => (await have.get(`${NODE}.two`))?.value.health === "healthy",
      60_000,
    );
    assert.deepEqual(host.processes().get(one.id), before, "one was not restarted");
    assert.equal(host.state, "running");
  } finally {
    await host.stop();
    await running;
  }
});

test("a host that starts without the bus starts what it ran, from its own disk", async () => {
  const { bus } = fx;
  const own = await tempRoot();
  const credential = bus.hostCredential(NODE);
  const options = {
    node: NODE,
    root: own,
    health: { healthyMs: 300 },
    pollMs: 100,
    graceMs: 2_000,
    stopProcessesOnStop: true,
    log: () => undefined,
  };
  try {
    // Applied once with the bus (which the test above restarted: writes wait for it)...
    const withBus = await Host.create({ ...options, credential });
    const withBusRun = withBus.run({ signal: new AbortController().signal });
    const digest = await waitFor(
      "the bundle stored",
      async () => (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest,
      60_000,
    );
    const p = processResource({ root: own, module: "offline", name: "p", digest });
    await bus.compose(NODE, [p]);
    await waitFor("the process with the bus", () => withBus.processes().has(p.id), 60_000);
    // ...then the machine restarts: its processes are gone, and no bus is to be found.
    await withBus.stop();
    await withBusRun;
    const nowhere = { ...credential, servers: [`nats://127.0.0.1:${await freePort()}`] };
    const offline = await Host.create({ ...options, credential: nowhere });
    const offlineRun = offline.run({ signal: new AbortController().signal });
    try {
      const identity = await waitFor("the process without the bus", () =>
        offline.processes().get(p.id),
      );
      assert.ok(await isAlive(identity));
    } finally {
      await offline.stop();
      await offlineRun;
    }
  } finally {
    await rm(own, { recursive: true, force: true });
  }
});
