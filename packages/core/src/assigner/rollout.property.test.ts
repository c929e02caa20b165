/** Properties of the rollout rules (issue 22), over random fleets, policies and event orders. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { RolloutPolicy } from "@mesh/protocol";
import { canonicalJson } from "../fingerprint.js";
import { assign } from "./assign.js";
import { after, apply, pass, reversed } from "./fixtures.js";
import { fleet, prepare, record, steer, wanting, type Fleet } from "./rollout-fleet.js";

const policy = fc.record(
  {
    canary: fc.integer({ min: 0, max: 2 }),
    batch: fc.constantFrom(1, 2, 3, "40%"),
    "min-healthy": fc.constantFrom("0s", "10s", "30s"),
    "healthy-deadline": fc.constantFrom("20s", "5m"),
    "max-failing": fc.constantFrom(0, 1),
    "pause-after-canary": fc.boolean(),
    order: fc.constantFrom("name", "random"),
  },
  { requiredKeys: [] },
) as fc.Arbitrary<RolloutPolicy>;

const event = fc.oneof(
  fc.record({ kind: fc.constant("tick" as const), seconds: fc.constantFrom(1, 5, 10, 30) }),
  fc.record({
    kind: fc.constant("fail" as const),
    node: fc.constantFrom("n1", "n2", "n3", "n4", "n5"),
  }),
  fc.record({
    kind: fc.constant("steer" as const),
    action: fc.constantFrom("pause", "resume", "abort", "retry" as const),
  }),
);

type Event = typeof event extends fc.Arbitrary<infer T> ? T : never;

/** Whether a node ran build 2 healthy for min-healthy, on the snapshot's own reports and beats. */
function proven(f: Fleet, node: string): boolean {
  const have = f.s.have.get(`${node}.hello`)?.current;
  const beat = f.s.presence.get(node)?.heartbeat;
  const min = record(f)?.policy.minHealthyMs ?? 0;
  if (have?.build !== f.b2 || have.health !== "healthy" || beat === undefined) return false;
  return min === 0 || Date.parse(beat) - Date.parse(have.since) >= min;
}

function failing(f: Fleet, node: string): boolean {
  const have = f.s.have.get(`${node}.hello`);
  return (have?.history ?? []).some((h) => h.build === f.b2 && h.health === "failing");
}

/** Plays the events; after each pass, checks that no wave came before its gate held. */
function play(p: RolloutPolicy, events: readonly Event[]): Fleet {
  const f = fleet(5, p);
  const broken = new Set<string>();
  for (const e of events) {
    if (e.kind === "fail") broken.add(e.node);
    if (e.kind === "steer")
      steer(f, e.action, e.action === "retry" ? record(f)?.attempt : undefined);
    const before = record(f);
    const wantedBefore = new Set(wanting(f, f.b2));
    const seconds = e.kind === "tick" ? e.seconds : 1;
    prepare(f, seconds, (n) => (broken.has(n) ? "failing" : "healthy"));
    // The gate, judged on what the pass reads.
    const gateHeld =
      before?.build !== f.b2 || before.waveNodes.every((n) => proven(f, n) || failing(f, n));
    pass(f.s);
    const now = record(f);
    // Nodes reached in this pass (a node admitted before may get the build back after a retry).
    const newcomers = wanting(f, f.b2).filter(
      (n) => !wantedBefore.has(n) && !(before?.admitted.includes(n) ?? false),
    );
    if (newcomers.length > 0 && before?.build === f.b2 && before.attempt === now?.attempt) {
      assert.ok(gateHeld, `wave ${now?.wave} given before wave ${before.wave} was proven`);
      const held = f.s.rolloutSteers.get("hello")?.action === "pause";
      assert.ok(!held, "no wave is given while paused");
    }
    for (const n of newcomers) assert.ok(now?.admitted.includes(n), `${n} given, not admitted`);
    assert.deepEqual(assign(f.s).writes, [], "a rerun writes nothing");
  }
  return f;
}

describe("rollout rules: properties (issue 22)", () => {
  it("no want advances a node past a gate that has not held; reruns write nothing", () => {
    fc.assert(
      fc.property(policy, fc.array(event, { maxLength: 30 }), (p, events) => {
        play(p, events);
      }),
      { numRuns: 150 },
    );
  });

  it("the result is independent of the order changes arrive in", () => {
    fc.assert(
      fc.property(policy, fc.array(event, { maxLength: 20 }), (p, events) => {
        const f = play(p, events);
        // One more step's inputs, then the same pass over the maps filled both ways.
        for (const n of f.nodes)
          f.s.presence.set(n, { ...f.s.presence.get(n)!, heartbeat: after(f.clock + 60) });
        const a = assign(f.s);
        const b = assign(reversed(f.s));
        assert.equal(canonicalJson(a.writes), canonicalJson(b.writes));
        apply(f.s, a);
      }),
      { numRuns: 100 },
    );
  });
});
