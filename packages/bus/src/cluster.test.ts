/**
 * The bus on a real three-server JetStream cluster (docs/nats.md §5): the layout takes the three
 * replicas the cluster allows, a users reload keeps every server's `cluster {}` block, a
 * server killed with SIGKILL under a constant write load loses no acknowledged write, reads
 * through the others are answered while one is silent, and a connection on the silent one
 * dials another first.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import type { Status } from "@nats-io/nats-core";
import { z } from "zod";
import { Bucket, ObjectStore, Stream, kvStreamName, objStreamName } from "@mesh/protocol";
import { isTransient } from "./bus-errors.js";
import { KvBucket } from "./kv-bucket.js";
import { ensureLayout, ensureStateBucket } from "./layout-setup.js";
import { readStanding } from "./mirror/sources.js";
import { streamPlacement } from "./replicas.js";
import { MeshBus, natsOf } from "./mesh-bus.js";
import { FULL_PERMISSIONS, hashPassword } from "./server/server-config.js";
import { serverFolderSink } from "./server/reload-users.js";
import { layoutReplicas, startTestCluster, type TestCluster } from "./testing/cluster.js";
import { deadline, startTestServer } from "./testing/harness.js";
import { waitFor as waitUntil } from "./testing/wait-for.js";

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

describe("a server of three gone silent (stopped, as behind a partition)", () => {
  it("reads through the others are answered meanwhile", async () => {
    // Reads through server 1 only; server 3 stops answering anything, its sockets left open,
    // as a machine whose cable was pulled. Every R1 consumer a read makes (keys, a watch) is
    // placed on one of the stream's three peers at random, server 3 too (decision 0182).
    const reader = await MeshBus.connect(
      {
        ...cluster.credential(cluster.admin, { node: "n1", module: "reader" }),
        servers: [cluster.urls[0] ?? ""],
      },
      { say: () => undefined },
    );
    const silent = cluster.server(2).pid;
    try {
      const state = await KvBucket.openWith(reader, "counter_total", z.unknown());
      await state.put("n-silent", { n: 1 });
      // The write on every copy first: a put is acknowledged by two of three, and a read's
      // consumer placed on the third before it has the write does not list it (what this tests
      // is a silent server, not how soon a copy catches up).
      await waitUntil(
        async () => {
          const placed = await streamPlacement(reader, "KV_counter_total");
          return (
            placed.followers.length === 2 && placed.followers.every((f) => f.current && f.lag === 0)
          );
        },
        { what: "every copy of counter_total current", timeout: 30_000 },
      );
      process.kill(silent, "SIGSTOP");
      const stoppedAt = performance.now();
      let reads = 0;
      for (let round = 0; round < 8; round++) {
        assert.ok((await state.keys()).includes("n-silent"), "keys() lists the key");
        assert.ok((await readStanding(state)).has("n-silent"), "a standing read holds it");
        assert.notEqual(await state.get("n-silent"), undefined, "a direct get answers it");
        reads += 3;
      }
      process.stdout.write(
        `# ${reads} reads answered in ${Math.round(performance.now() - stoppedAt)} ms with a server of three silent\n`,
      );
    } finally {
      process.kill(silent, "SIGCONT");
      await reader.close();
    }
  });
});

describe("the server a connection is on gone silent", () => {
  it("the connection's first dial after the loss is to another server", async () => {
    const bus = await MeshBus.connect(
      cluster.credential(cluster.admin, { node: "n1", module: "mover" }),
      { say: () => undefined },
    );
    const nc = natsOf(bus).nc;
    const on = cluster.urls.findIndex((url) => url.endsWith(`:${nc.getServer().split(":")[1]}`));
    assert.ok(on >= 0, `connected to one of the cluster's servers (${nc.getServer()})`);
    const silent = cluster.server(on).pid;
    const dials: string[] = [];
    const statuses = nc.status() as AsyncIterable<Status> & { stop(): void };
    const back = (async () => {
      for await (const status of statuses) {
        dials.push(status.type);
        if (status.type === "reconnect") return status.server;
      }
      return undefined;
    })();
    process.kill(silent, "SIGSTOP");
    const stoppedAt = performance.now();
    try {
      const now = await deadline(back, 30_000, "the connection back on another server");
      const took = performance.now() - stoppedAt;
      process.stdout.write(
        `# failed over from server ${on + 1} to ${String(now)} in ${Math.round(took)} ms: ${dials.filter((d) => d !== "ping").join(", ")}\n`,
      );
      // The client's own choice was the head of its pool, the server just lost: that dial
      // waited out its 5 s timeout before another was tried (decision 0182).
      assert.equal(dials.filter((d) => d === "reconnecting").length, 1, dials.join(", "));
      assert.ok(
        now !== undefined && !(cluster.urls[on] ?? "").endsWith(`:${now.split(":")[1]}`),
        `back on another server (${String(now)})`,
      );
    } finally {
      process.kill(silent, "SIGCONT");
      statuses.stop();
      await bus.close();
    }
  });
});

describe("one server", () => {
  it("creates the layout with the one replica it allows", async () => {
    await using server = await startTestServer();
    const credential = { servers: [server.url], ...server.admin, node: "n1", module: "test" };
    assert.equal(await layoutReplicas(credential), 1);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 50));
}
