/**
 * The bus on a real three-server JetStream cluster (docs/nats.md §5): the layout takes the three
 * replicas the cluster allows, a users reload keeps every server's `cluster {}` block, and a
 * server killed with SIGKILL under a constant write load loses no acknowledged write.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Bucket, ObjectStore, Stream, kvStreamName, objStreamName } from "@mesh/protocol";
import { isTransient } from "./bus-errors.js";
import { ensureLayout, ensureStateBucket } from "./layout-setup.js";
import { MeshBus, natsOf } from "./mesh-bus.js";
import { FULL_PERMISSIONS, hashPassword } from "./server/server-config.js";
import { serverFolderSink } from "./server/reload-users.js";
import { startTestCluster, type TestCluster } from "./testing/cluster.js";
import { deadline, startTestServer } from "./testing/harness.js";

let cluster: TestCluster;
let admin: MeshBus;

before(async () => {
  cluster = await startTestCluster();
  admin = await MeshBus.connect(cluster.credential(cluster.admin, { node: "n1", module: "test" }), {
    say: () => undefined,
  });
});

after(async () => {
  await admin?.close();
  await cluster?.stop();
});

describe("a three-server cluster", () => {
  it("creates every bucket, store and stream of the layout with 3 replicas, each led once it returns", async () => {
    const report = await ensureLayout(admin);
    assert.equal(report.replicas, 3);
    const jsm = await jetstreamManager(natsOf(admin).nc, { checkAPI: false });
    const names = [
      ...Object.values(Bucket).map(kvStreamName),
      ...Object.values(ObjectStore).map(objStreamName),
      ...Object.values(Stream),
    ];
    // Read at once, before anything else asks: a stream still electing its leader would have
    // none here, and the first read of it (a bucket's keys) would time out.
    const infos = await Promise.all(names.map((name) => jsm.streams.info(name)));
    for (const [i, info] of infos.entries()) {
      assert.equal(info.config.num_replicas, 3, names[i]);
      assert.ok(info.cluster?.leader !== undefined, `${names[i]} has a leader`);
    }
    assert.equal(await ensureStateBucket(admin, "counter_total"), true);
    assert.equal((await jsm.streams.info(kvStreamName("counter_total"))).config.num_replicas, 3);
  });

  it("reloads a new users list on every server and keeps the cluster block", async () => {
    const sink = serverFolderSink(`${cluster.server(0).dir}/..`);
    const ada = { user: "ada", password: "ada-password-1" };
    const adminUser = {
      user: cluster.admin.user,
      passwordHash: await hashPassword(cluster.admin.password),
      permissions: FULL_PERMISSIONS,
    };
    await sink.setUsers([
      adminUser,
      {
        user: ada.user,
        passwordHash: await hashPassword(ada.password),
        permissions: FULL_PERMISSIONS,
      },
    ]);
    for (let i = 0; i < 3; i++) {
      const config = await readFile(cluster.server(i).configPath, "utf8");
      assert.match(config, /cluster \{/, `server ${i + 1} kept its cluster block`);
      assert.match(config, /"ada"/);
      const one = await MeshBus.connect(
        { servers: [cluster.urls[i] ?? ""], ...ada, node: "n1", module: "ada" },
        { say: () => undefined },
      );
      await one.close();
    }
    // Still one cluster: a write through one server is read through another.
    const through = await MeshBus.connect(
      { servers: [cluster.urls[2] ?? ""], ...ada, node: "n1", module: "ada2" },
      { say: () => undefined },
    );
    try {
      await (await natsOf(admin).kvm.open(Bucket.presence)).put("n-reload", "{}");
      const read = await natsOf(through).kvm.open(Bucket.presence);
      assert.notEqual(await read.get("n-reload"), null);
    } finally {
      await through.close();
    }
  });

  it("loses no acknowledged write when the stream's leader is killed with SIGKILL, and writes go on", async () => {
    const jsm = await jetstreamManager(natsOf(admin).nc, { checkAPI: false });
    const stream = kvStreamName(Bucket.presence);
    const leaderName = (await jsm.streams.info(stream)).cluster?.leader;
    const victim = [0, 1, 2].find((i) => `mesh-test-s${i + 1}` === leaderName) ?? 0;
    const kv = await natsOf(admin).kvm.open(Bucket.presence);
    const acked: string[] = [];
    let failed = 0;
    let stop = false;
    const writer = (async () => {
      for (let n = 0; !stop; n++) {
        const key = `w${n}`;
        for (;;) {
          try {
            await kv.put(key, JSON.stringify({ n }));
            acked.push(key);
            break;
          } catch (error) {
            // The leader's loss: no responder, or a timeout, for 4–8 s (docs/nats.md §5);
            // retried.
            failed += 1;
            if (!isTransient(error) && !/timeout/i.test((error as Error).message)) throw error;
            if (stop) return;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      }
    })();
    await deadline(
      waitFor(() => acked.length >= 20),
      10_000,
      "writes before the kill",
    );
    await cluster.kill(victim);
    const atKill = acked.length;
    await deadline(
      waitFor(() => acked.length >= atKill + 20),
      60_000,
      "writes after the kill",
    );
    await cluster.start(victim);
    await deadline(
      waitFor(() => acked.length >= atKill + 40),
      60_000,
      "writes after the restart",
    );
    stop = true;
    await writer;
    process.stdout.write(`# ${acked.length} writes acknowledged, ${failed} failed and retried\n`);
    for (const key of acked) {
      assert.notEqual(await kv.get(key), null, `acknowledged write ${key} is there`);
    }
  });
});

describe("one server", () => {
  it("creates the layout with the one replica it allows", async () => {
    const server = await startTestServer();
    try {
      const bus = await MeshBus.connect(
        { servers: [server.url], ...server.admin, node: "n1", module: "test" },
        { say: () => undefined },
      );
      try {
        assert.equal((await ensureLayout(bus)).replicas, 1);
      } finally {
        await bus.close();
      }
    } finally {
      await server.stop();
    }
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 50));
}
