import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assign } from "./assign.js";
import {
  fleet,
  healthy,
  record,
  steer,
  step,
  wanting,
  wantOn,
  type Fleet,
} from "./rollout-fleet.js";

/** Steps until the rollout is done or halted; the waves given, in order. */
function roll(f: Fleet, seconds = 10, behaviour = healthy, most = 100): string[][] {
  const waves: string[][] = [];
  let wave = record(f)?.wave ?? 0;
  for (let i = 0; i < most; i++) {
    step(f, seconds, behaviour);
    const r = record(f);
    if (r !== undefined && r.wave !== wave) {
      waves.push(r.waveNodes);
      wave = r.wave;
    }
    if (r?.build === f.b2 && (r.status === "done" || r.status === "failed")) break;
  }
  return waves;
}

/**
 * A paused rollout stays paused however long it is stepped, the canary alone given; a resume
 * gives the next wave.
 */
function heldAtTheCanaryUntilResumed(f: Fleet): void {
  for (let i = 0; i < 10; i++) step(f, 10);
  assert.equal(record(f)?.status, "paused");
  assert.deepEqual(wanting(f, f.b2), ["n1"]);
  steer(f, "resume");
  step(f, 10);
  assert.deepEqual(wanting(f, f.b2), ["n1", "n2"]);
}

describe("rollout: waves (issue 22)", () => {
  it("a good build goes canary → batches → all, never more than a batch unproven", () => {
    const f = fleet(8);
    const unproven: number[] = [];
    const waves: string[][] = [];
    for (let i = 0; i < 100 && !(record(f)?.build === f.b2 && record(f)?.status === "done"); i++) {
      step(f, 10);
      const r = record(f);
      if (r !== undefined && waves.length < r.wave) waves.push(r.waveNodes);
      // Unproven: given build 2 and not yet healthy for 30 s on its own clock.
      const given = wanting(f, f.b2);
      unproven.push(given.filter((n) => f.clock - (f.started.get(n) ?? f.clock) < 30).length);
      assert.deepEqual(assign(f.s).writes, [], "a rerun writes nothing");
    }
    assert.deepEqual(waves, [["n1"], ["n2", "n3"], ["n4", "n5"], ["n6", "n7"], ["n8"]]);
    assert.equal(record(f)?.status, "done");
    assert.deepEqual(wanting(f, f.b2), f.nodes);
    assert.ok(Math.max(...unproven) <= 2, `at most a batch unproven: ${unproven.join(",")}`);
  });

  it("a node not reached keeps its build, and its reason names its wave and what it waits for", () => {
    const f = fleet(8);
    step(f, 10);
    assert.deepEqual(wanting(f, f.b2), ["n1"]);
    const held = wantOn(f, "n8");
    assert.equal(held?.rule, "waves");
    assert.equal(held?.build, f.b1);
    assert.match(
      held?.reason ?? "",
      /n8 is in wave 5 of 5, given once the waves before it ran it healthy for 30s/,
    );
    assert.match(record(f)?.waiting ?? "", /wave 1 of 5 \(n1\): each runs .* healthy for 30s/);
  });

  it("a gate holds only once a heartbeat comes min-healthy after the healthy report", () => {
    const f = fleet(4);
    step(f, 10); // n1 given
    step(f, 10); // n1 reports healthy at 20
    step(f, 29); // its heartbeat at 49: 29 s healthy
    assert.deepEqual(wanting(f, f.b2), ["n1"]);
    step(f, 1); // 30 s
    assert.deepEqual(wanting(f, f.b2), ["n1", "n2"]);
  });

  it("a build whose process exits on start never leaves the canary, and every node ends on the previous build", () => {
    const f = fleet(6);
    const r = (() => {
      let last;
      for (let i = 0; i < 5; i++) last = step(f, 5, () => "failing");
      return last;
    })();
    assert.equal(record(f)?.status, "failed");
    assert.deepEqual(wanting(f, f.b2), []);
    assert.deepEqual(wanting(f, f.b1), f.nodes);
    assert.deepEqual([...f.started.keys()], ["n1"], "only the canary ever ran it");
    assert.ok(r);
    assert.deepEqual(assign(f.s).writes, [], "the halt stands: a rerun writes nothing");
  });

  it("the halt's condition names the build, the nodes, the error and the retry command", () => {
    const f = fleet(3);
    const said = [];
    for (let i = 0; i < 3; i++) said.push(...step(f, 5, () => "failing").conditions);
    const halt = said.find((c) => c.name === "rollout-failed-hello");
    assert.equal(halt?.level, "error");
    assert.match(halt?.message ?? "", new RegExp(`build ${f.b2} halted at wave 1`));
    assert.match(halt?.message ?? "", /n1 \(exited with 1\)/);
    assert.match(halt?.message ?? "", /mesh rollout retry hello/);
    assert.match(wantOn(f, "n1")?.reason ?? "", /set back/);
  });

  it("a build failing after 40 s is stopped at its batch and reverted everywhere in one pass", () => {
    const f = fleet(8, { "min-healthy": "60s" });
    const fails = (n: string, ran: number) => (n === "n2" && ran >= 40 ? "failing" : "healthy");
    let halting;
    for (let i = 0; i < 60 && record(f)?.status !== "failed"; i++) halting = step(f, 10, fails);
    assert.equal(record(f)?.status, "failed");
    assert.equal(record(f)?.wave, 2, "stopped at the batch of n2");
    const reverted = (halting?.writes ?? []).filter(
      (w) =>
        w.bucket === "mesh-wants" && (w.value as { build?: string } | undefined)?.build === f.b1,
    );
    const keys = reverted.map((w) => w.key);
    for (const n of ["n1", "n2", "n3"]) assert.ok(keys.includes(`${n}.hello`), `${n} set back`);
    assert.deepEqual(wanting(f, f.b2), [], "in the one pass that halted it");
    assert.deepEqual(wanting(f, f.b1), f.nodes);
  });

  it("a node not healthy within the deadline halts the rollout", () => {
    const f = fleet(3, { "healthy-deadline": "1m" });
    for (let i = 0; i < 8; i++) step(f, 10, () => "silent");
    assert.equal(record(f)?.status, "failed");
    assert.match(record(f)?.failed?.reason ?? "", /n1: not healthy within 1m/);
  });

  it("max-failing tolerates that many nodes failing: they are set back, the others go on", () => {
    const f = fleet(5, { "max-failing": 1, batch: 2, "min-healthy": "10s" });
    roll(f, 10, (n) => (n === "n2" ? "failing" : "healthy"));
    assert.equal(record(f)?.status, "done");
    assert.deepEqual(wanting(f, f.b1), ["n2"]);
    assert.equal(wantOn(f, "n2")?.rule, "set-back");
  });

  it("pause holds the next wave; resume gives it", () => {
    const f = fleet(4);
    step(f, 10);
    steer(f, "pause");
    heldAtTheCanaryUntilResumed(f);
  });

  it("promote skips the remaining gates", () => {
    const f = fleet(6);
    step(f, 10);
    steer(f, "promote");
    step(f, 10);
    assert.deepEqual(wanting(f, f.b2), f.nodes);
  });

  it("abort sets every node back at once; retry starts the rollout again from the canary", () => {
    const f = fleet(6);
    roll(f, 10, healthy, 6);
    assert.ok(wanting(f, f.b2).length > 1);
    steer(f, "abort");
    step(f, 10);
    assert.equal(record(f)?.status, "aborted");
    assert.deepEqual(wanting(f, f.b2), []);
    steer(f, "retry", record(f)?.attempt);
    step(f, 10);
    assert.equal(record(f)?.attempt, 2);
    assert.deepEqual(wanting(f, f.b2), ["n1"], "the canary again");
  });

  it("pause-after-canary waits for a resume once the canary is proven", () => {
    const f = fleet(4, { "pause-after-canary": true });
    heldAtTheCanaryUntilResumed(f);
  });

  it("batch 100% gives every node at once, as before waves", () => {
    const f = fleet(5, { batch: "100%" });
    step(f, 1);
    assert.deepEqual(wanting(f, f.b2), f.nodes);
  });

  it("a build's manifest says its policy (rollout:), and the operator's overrides it field by field", () => {
    const f = fleet(6, undefined, { canary: 2, batch: "100%", "min-healthy": "20s" });
    assert.deepEqual(roll(f, 10), [
      ["n1", "n2"],
      ["n3", "n4", "n5", "n6"],
    ]);
    assert.deepEqual(
      [record(f)?.status, record(f)?.policy.source, record(f)?.policy.minHealthyMs],
      ["done", "manifest", 20_000],
    );
    const o = fleet(6, { canary: 1 }, { canary: 2, batch: "100%" });
    assert.deepEqual(roll(o, 10), [["n1"], ["n2", "n3", "n4", "n5", "n6"]]);
    assert.deepEqual([record(o)?.policy.source, record(o)?.policy.batch], ["operator", 6]);
  });

  it("a restart mid-rollout (the same buckets, nothing held in memory) continues: no write", () => {
    const f = fleet(8);
    roll(f, 10, healthy, 7);
    const s = { ...f.s, own: { ...f.s.own, conditions: new Map() } };
    assert.equal(record(f)?.status, "rolling");
    assert.deepEqual(assign(s).writes, []);
  });

  it("a lost record write never lets a second wave through: given nodes gate the next", () => {
    const f = fleet(8);
    roll(f, 10, healthy, 6);
    const before = record(f);
    assert.ok(before !== undefined && before.wave >= 2);
    // The record as it was a wave earlier, with the wants of the last wave written.
    f.s.own.rollouts.set("hello", {
      ...before,
      wave: before.wave - 1,
      waveNodes: [],
      admitted: before.admitted.filter((n) => !before.waveNodes.includes(n)),
    });
    const r = assign(f.s);
    const advanced = r.writes.filter(
      (w) =>
        w.bucket === "mesh-wants" && (w.value as { build?: string } | undefined)?.build === f.b2,
    );
    assert.deepEqual(advanced, [], "no node given the build until the unrecorded wave is proven");
  });
});
