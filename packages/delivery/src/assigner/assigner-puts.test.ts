/** The assigner on a real bus with failed builds, retries and puts (issue 14). */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { KvBucket, MeshBus, writeCredential } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { Bucket, Principal, type Want } from "@mesh/protocol";
import { T0 } from "./test-fleet.js";
import { assignerBus, startAssignerProcess } from "./test-assigner.js";

const bus = assignerBus();

describe("assigner on a real bus: failed marks and puts (issue 14)", () => {
  it("a first build that fails stays wanted, failing, with the fix in its reason; a new build is wanted at once", async () => {
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 1, builds: 1 });
    const have = await KvBucket.open(bus.admin, Bucket.have);
    await using a = await bus.startAssigner();
    const w = await bus.wants();
    await a.until(async () => (await w.get("n1.hello"))?.value.build === ids[0], "the want");
    await have.put("n1.hello", {
      build: ids[0],
      fingerprint: "f",
      health: "failing",
      since: T0,
      restarts: 3,
      lastError: "exited with 1",
    });
    const differences = await KvBucket.open(bus.admin, Bucket.differences);
    await a.until(
      async () => /failing/.test((await differences.get("n1.hello"))?.value.reasons.join() ?? ""),
      "the difference saying it fails",
    );
    const kept = (await w.get("n1.hello"))?.value;
    assert.equal(kept?.build, ids[0], "still wanted: the host goes on restarting it");
    assert.match(kept?.reason ?? "", /mesh retry hello --node n1/);
    const second = await bus.addBuild(2);
    await a.until(async () => (await w.get("n1.hello"))?.value.build === second, "a new build");
  });

  it("an operator's retry (on the operator's own grant) lifts a set-back: the newest is wanted again", async () => {
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 1, builds: 2 });
    await bus.report(ids[0] as string, "healthy");
    const failedAt = await bus.report(ids[1] as string, "failing");
    const a = await bus.startAssigner();
    const operator = await MeshBus.connect(bus.credential(Principal.operator));
    try {
      const w = await bus.wants();
      await a.until(async () => (await w.get("n1.hello"))?.value.rule === "set-back", "set-back");
      const retries = await KvBucket.open(operator, Bucket.retries);
      await retries.put("n1.hello", { haveRevision: failedAt, by: "ada", why: "fixed", at: T0 });
      await a.until(
        async () => (await w.get("n1.hello"))?.value.build === ids[1],
        "the newest wanted again after the retry",
      );
      assert.equal((await w.get("n1.hello"))?.value.rule, "newest");
      await bus.report(ids[1] as string, "failing");
      await a.until(
        async () => (await w.get("n1.hello"))?.value.rule === "set-back",
        "a failure after the retry sets it back again",
      );
    } finally {
      await operator.close();
      await a.stop();
    }
  });
});

describe("assigner on a real bus: a restart never undoes a put (issue 14)", () => {
  it("killing and restarting the assigner with 3,000 puts never writes a want a put contradicts", async () => {
    await bus.freshLayout();
    const nodes = 300;
    const ids = await bus.seed({ nodes, builds: 2 });
    const older = ids[0] as string;
    const puts = await KvBucket.open(bus.admin, Bucket.puts);
    const put = { build: older, by: "ada", why: "hold", at: T0 };
    // Every present node put to the older build, and 2,700 puts of modules nowhere assigned.
    await Promise.all(Array.from({ length: nodes }, (_, i) => puts.put(`n${i + 1}.hello`, put)));
    await Promise.all(Array.from({ length: 2700 }, (_, i) => puts.put(`x${i}.other`, put)));
    const dir = await mkdtemp(join(tmpdir(), "mesh-assigner-puts-"));
    const credential = join(dir, "assigner.json");
    await writeCredential(credential, bus.credential(Principal.assigner));
    const w = await bus.wants();
    const running: Array<ReturnType<typeof startAssignerProcess>> = [];
    const seen: string[] = [];
    const ac = new AbortController();
    try {
      const first = startAssignerProcess(credential);
      running.push(first);
      await deadline(first.firstPass, 180_000, "the first process's first pass");
      for (const key of await w.keys()) assert.equal((await w.get(key))?.value.build, older, key);
      // Every write to the wants from here on, as it happens; a sentinel key written last marks
      // where the writes to look at end (the watch hands them in the order they were made).
      const SENTINEL = "sentinel.hello";
      let listening!: () => void;
      const heard = new Promise<void>((r) => (listening = r));
      let sentinel!: () => void;
      const sentinelSeen = new Promise<void>((r) => (sentinel = r));
      const watching = (async () => {
        for await (const e of w.watch({ signal: ac.signal, include: "updates" })) {
          if (e.type === "current") listening();
          else if (e.key === SENTINEL) sentinel();
          else if (e.type !== "put" || e.value.build !== older) seen.push(`${e.key} ${e.type}`);
        }
      })().catch(() => undefined);
      await deadline(heard, 60_000, "the watch of the wants");
      for (let round = 0; round < 3; round++) {
        const before = running.pop();
        await before?.kill();
        const next = startAssignerProcess(credential);
        running.push(next);
        await deadline(next.firstPass, 180_000, `restart ${round + 1}'s first pass`);
      }
      await w.put(SENTINEL, (await w.get("n1.hello"))?.value as Want);
      await deadline(sentinelSeen, 60_000, "the sentinel written after the last first pass");
      ac.abort();
      await watching;
      assert.deepEqual(seen, [], "no want ever moved off the put");
      const keys = (await w.keys()).filter((k) => k !== SENTINEL);
      assert.equal(keys.length, nodes, "a want on every node, all still the put's");
    } finally {
      ac.abort();
      for (const p of running) await p.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
