/**
 * Seed 003's two rules of time (issue 28), on a real bus, heard from the bus itself: the assigner
 * holds no timer — at rest it writes nothing and makes no pass, its summary included — and while
 * the puts bucket cannot be opened, a pass started by a watched change tries it again, at most
 * once a minute. The shorter tests take the minute as an option; the last keeps the real one.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KvBucket, ensureLayout } from "@mesh/bus";
import { deadline, destroyBucket } from "@mesh/bus/testing";
import { Bucket, PRESENCE_GONE_MS, SUMMARY_KEY } from "@mesh/protocol";
import { assignerBus } from "./test-assigner.js";
import { T0, presenceOf } from "./test-fleet.js";
import { tapBus, type BusTap } from "./test-tap.js";

const bus = assignerBus();

/** Resolves once nothing was written for `quietMs`: the first pass and its summary are done. */
async function settled(tap: BusTap, quietMs = 2_000): Promise<number> {
  return deadline(
    (async () => {
      for (;;) {
        const last = tap.writes(0).at(-1)?.at ?? 0;
        if (Date.now() - last >= quietMs) return Date.now();
        await new Promise((r) => setTimeout(r, 200));
      }
    })(),
    60_000,
    "the first pass's writes to settle",
  );
}

/** A window of `ms` with nothing done to the bus: what the assigner does then, it does alone. */
const rest = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Every few hundred ms a change the assigner watches (n2's facts), until `stop` aborts. */
function keepChanging(stop: AbortSignal, changes: number[]): Promise<void> {
  return (async () => {
    const presence = await KvBucket.open(bus.admin, Bucket.presence);
    for (let i = 0; !stop.aborted; i++) {
      const p = presenceOf("n2");
      await presence.put("n2", { ...p, facts: { ...p.facts, hostname: `h${i}` } });
      changes.push(Date.now());
      await rest(300);
    }
  })();
}

describe("assigner on a real bus: no timer (issue 28)", () => {
  it("at rest after its first pass it writes nothing and runs no pass, though a node turns gone meanwhile; the next change counts it gone", async () => {
    await bus.freshLayout();
    await bus.seed({ nodes: 2, builds: 1 });
    const presence = await KvBucket.open(bus.admin, Bucket.presence);
    // n1 was heard 45 s ago less 15 s: it turns gone while the assigner rests.
    const goneAt = Date.now() + 15_000;
    await presence.put("n1", presenceOf("n1", new Date(goneAt - PRESENCE_GONE_MS).toISOString()));
    const tap = await tapBus(bus.admin);
    const a = await bus.startAssigner();
    const summaries = await KvBucket.open(bus.admin, Bucket.summary);
    try {
      await a.until(() => a.passes.length >= 1, "the first pass");
      const from = await settled(tap);
      assert.equal((await summaries.get(SUMMARY_KEY))?.value.nodes.present, 1, "n1 present");
      const passes = a.passes.length;
      // At least 10 s, and until 5 s after n1 turned gone.
      await rest(Math.max(10_000, goneAt + 5_000 - Date.now()));
      assert.deepEqual(tap.writes(from), [], "nothing written at rest");
      assert.equal(a.passes.length, passes, "no pass at rest");
      assert.deepEqual(tap.tries(Bucket.puts, from), [], "no try of any bucket at rest");
      assert.equal((await summaries.get(SUMMARY_KEY))?.value.nodes.present, 1, "not judged again");
      // A change: n3 arrives. Its computation judges n1 by the clock then.
      await presence.put("n3", presenceOf("n3", new Date().toISOString()));
      await deadline(
        (async () => {
          while ((await summaries.get(SUMMARY_KEY))?.value.nodes.gone !== 2) await rest(100);
        })(),
        30_000,
        "n1 and n2 counted gone once a change came",
      );
    } finally {
      tap.stop();
      await a.stop();
    }
  });

  it("without the puts bucket, tries are the interval apart, each after a watched change; a put counts from the first pass after the interval", async () => {
    const INTERVAL = 5_000;
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 2, builds: 2 });
    await destroyBucket(bus.admin, Bucket.puts);
    const tap = await tapBus(bus.admin);
    const started = Date.now();
    const a = await bus.startAssigner({ putsReopenIntervalMs: INTERVAL });
    const w = await bus.wants();
    const changes: number[] = [];
    try {
      await a.until(() => a.passes.length >= 1, "the first pass");
      const from = await settled(tap);
      assert.equal(tap.tries(Bucket.puts, started).length > 0, true, "tried once at the start");
      // Quiet for twice the interval: no try without a change.
      await rest(2 * INTERVAL);
      assert.deepEqual(tap.tries(Bucket.puts, from), [], "no try at rest");
      // Changes every 300 ms for over three intervals; the bucket and a put made midway.
      const stop = new AbortController();
      const changing = keepChanging(stop.signal, changes);
      await rest(INTERVAL);
      // A try may land between the bucket's making and the put: it opens an empty bucket.
      const madeAt = Date.now();
      await ensureLayout(bus.admin);
      const puts = await KvBucket.open(bus.admin, Bucket.puts);
      await puts.put("n1.hello", { build: ids[0] as string, by: "ada", why: "hold", at: T0 });
      await a.until(
        async () => (await w.get("n1.hello"))?.value.rule === "put",
        "the put taken into account",
      );
      stop.abort();
      await changing;
      const tries = tryTimes(tap, started);
      assert.ok(tries.length >= 2, `tries: ${tries.length}`);
      for (let i = 1; i < tries.length; i++) {
        const gap = (tries[i] as number) - (tries[i - 1] as number);
        // 100 ms: the assigner's clock read and the tap's hearing are not one instant.
        assert.ok(gap >= INTERVAL - 100, `try ${i} came ${gap} ms after the one before`);
        assert.ok(
          changes.some((c) => c <= (tries[i] as number) && c > (tries[i - 1] as number)),
          `try ${i} follows a watched change`,
        );
      }
      // The first pass that heard the puts is the first after the interval since the last try
      // that found no bucket; the put's want is written by it, or (when it opened the bucket
      // before the put was in it, or took its snapshot before the put) by a pass after it.
      const firstOpen = a.passes.findIndex((p) => p.puts);
      const lastFailed = tries.filter((t) => t < madeAt).at(-1) as number;
      assert.ok((a.passedAt[firstOpen] as number) >= lastFailed + INTERVAL - 100);
      assert.ok(
        a.passes.slice(firstOpen).some((p) => p.puts && p.writes >= 1),
        "the put's want written by a pass that heard the puts",
      );
      assert.equal((await w.get("n1.hello"))?.value.build, ids[0]);
    } finally {
      tap.stop();
      await a.stop();
    }
  });

  it("with the real minute: two minutes at rest write nothing and try nothing; the first change after makes the one try, and a put made meanwhile counts in that pass", async () => {
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 1, builds: 2 });
    await destroyBucket(bus.admin, Bucket.puts);
    const tap = await tapBus(bus.admin);
    const started = Date.now();
    const a = await bus.startAssigner();
    const w = await bus.wants();
    try {
      await a.until(() => a.passes.length >= 1, "the first pass");
      const from = await settled(tap);
      const passes = a.passes.length;
      // The bucket and a put made at once: not a change the assigner watches (it cannot).
      await ensureLayout(bus.admin);
      const puts = await KvBucket.open(bus.admin, Bucket.puts);
      await puts.put("n1.hello", { build: ids[0] as string, by: "ada", why: "hold", at: T0 });
      await rest(120_000);
      assert.deepEqual(tap.writes(from, [Bucket.puts]), [], "nothing written at rest");
      assert.equal(a.passes.length, passes, "no pass at rest");
      assert.equal(tryTimes(tap, started).length, 1, "the start's try, and none at rest");
      assert.equal((await w.get("n1.hello"))?.value.rule, "newest");
      const presence = await KvBucket.open(bus.admin, Bucket.presence);
      await presence.put("n2", presenceOf("n2"));
      await a.until(() => a.passes.length > passes, "the pass the change made");
      assert.equal(a.passes[passes]?.puts, true, "that pass opened the puts");
      assert.equal((await w.get("n1.hello"))?.value.rule, "put", "and decided with them");
      assert.equal(tryTimes(tap, started).length, 2);
    } finally {
      tap.stop();
      await a.stop();
    }
  });
});

/** When each try to watch the puts bucket began: requests less than 1 s apart are one try. */
function tryTimes(tap: BusTap, since: number): number[] {
  const out: number[] = [];
  for (const t of tap.tries(Bucket.puts, since))
    if (out.length === 0 || t.at - (out.at(-1) as number) > 1_000) out.push(t.at);
  return out;
}
