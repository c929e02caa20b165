/**
 * A watch through the leader holds its standing entries back until they reach the leader's
 * newest (decision 0210). The copy behind is made on three servers in
 * packages/cli/src/e2e/stale-read.e2e.test.ts; here, what the hold does with what a copy hands,
 * and a watch of a real bucket opened `fromLeader`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { KvWatchEntry } from "@nats-io/kv";
import { z } from "zod";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { heldUntilCurrent } from "./current-copy.js";
import { KvBucket } from "./kv-bucket.js";
import type { RawWatch } from "./kv-watch.js";
import { MeshBus } from "./mesh-bus.js";
import { createBucket } from "./testing/buckets.js";
import { credentialFor, startTestServer, type TestServer } from "./testing/harness.js";
import { readStanding } from "./mirror/sources.js";

/** What a copy hands: these revisions standing, then `live` ones, then the end. */
function copyHanding(standing: readonly number[], live: readonly number[] = []) {
  const queue: Array<number | undefined> = [...standing, ...live, undefined];
  let stopped = false;
  const raw: RawWatch = {
    pending: standing.length,
    deliverPrefix: "_INBOX.x.",
    ended: undefined,
    next: () => {
      const revision = queue.shift();
      return Promise.resolve(
        revision === undefined ? undefined : ({ key: `k${revision}`, revision } as KvWatchEntry),
      );
    },
    stop: () => void (stopped = true),
  };
  return { raw, stopped: () => stopped };
}

async function drain(raw: RawWatch): Promise<number[]> {
  const out: number[] = [];
  for (let e = await raw.next(); e !== undefined; e = await raw.next()) out.push(e.revision);
  return out;
}

describe("heldUntilCurrent", () => {
  for (const [what, standing, newest] of [
    ["a copy that holds the leader's newest", [3, 7, 9], 9],
    ["a copy ahead of what the leader held when asked", [3, 7, 12], 9],
    ["an empty filter on the leader too", [], 0],
  ] as const) {
    test(`${what}: hands the standing entries, then what comes`, async () => {
      const copy = copyHanding(standing, [13]);
      assert.deepEqual(await drain(heldUntilCurrent(copy.raw, newest, "w")), [...standing, 13]);
    });
  }

  for (const [what, standing, newest] of [
    ["a copy behind the leader", [3, 7], 9],
    ["a copy that holds nothing yet", [], 4],
  ] as const) {
    test(`${what}: WATCH_ENDED before anything is handed, its consumer stopped`, async () => {
      const copy = copyHanding(standing, [9]);
      const held = heldUntilCurrent(copy.raw, newest, "watching b");
      await assert.rejects(held.next(), (e) => isMeshError(e, ErrorCode.WATCH_ENDED));
      assert.ok(copy.stopped());
    });
  }
});

describe("a bucket opened fromLeader on one server", () => {
  let server: TestServer;
  let bus: MeshBus;
  before(async () => {
    server = await startTestServer();
    bus = await MeshBus.connect(credentialFor(server, server.admin, { node: "n1", module: "t" }), {
      say: () => undefined,
    });
    await createBucket(bus, "leader_reads");
  });
  after(async () => {
    await bus.close();
    await server.stop();
  });

  test("a watch hands what stands (the leader's newest included) and a get reads it", async () => {
    const plain = await KvBucket.openWith(bus, "leader_reads", z.string());
    for (const [k, v] of [
      ["a.x", "1"],
      ["a.y", "2"],
      ["b.z", "3"],
      ["a.x", "4"],
    ] as const)
      await plain.put(k, v);
    const leader = await KvBucket.openWith(bus, "leader_reads", z.string(), { fromLeader: true });
    assert.deepEqual(
      [...(await readStanding(leader, { key: "a.*" }))],
      [
        ["a.y", "2"],
        ["a.x", "4"],
      ],
    );
    assert.equal((await leader.get("a.x"))?.value, "4");
    assert.deepEqual([...(await readStanding(leader, { key: "c.>" }))], []);
  });
});
