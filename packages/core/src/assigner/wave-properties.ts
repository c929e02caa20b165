/**
 * What the rollout property tests share (not exported from the package): random policies, the
 * events every play has (the clock moves, a node breaks, the operator steers), and the two
 * properties every kind of rollout is held to.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import fc from "fast-check";
import type { RolloutPolicy } from "@mesh/protocol";
import { canonicalJson } from "../fingerprint.js";
import { assign } from "./assign.js";
import { after, apply, reversed, type ClockedFleet, type MutableSnapshot } from "./fixtures.js";

export const rolloutPolicy = fc.record(
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

/** The clock moves by some seconds. */
export const tickEvent = fc.record({
  kind: fc.constant("tick" as const),
  seconds: fc.constantFrom(1, 5, 10, 30),
});

/** A node of the five breaks. */
export const failEvent = fc.record({
  kind: fc.constant("fail" as const),
  node: fc.constantFrom("n1", "n2", "n3", "n4", "n5"),
});

/** The operator says one of `actions`. */
export const steerEvent = <A extends string>(...actions: A[]) =>
  fc.record({ kind: fc.constant("steer" as const), action: fc.constantFrom(...actions) });

/** A rollout's record as the pass checks read it. */
interface WaveSeen {
  readonly wave: number;
  readonly admitted: readonly string[];
}

/** What one pass of a play saw: the record and the nodes given the new thing, before and after. */
export interface PassSeen {
  readonly before: WaveSeen | undefined;
  readonly now: WaveSeen | undefined;
  readonly givenBefore: ReadonlySet<string>;
  readonly givenNow: readonly string[];
  /** The gates apply to this pass: the rollout standing before it went on (not promoted). */
  readonly gated: boolean;
  /** Every node of the wave before the pass was proven or failing, on what the pass read. */
  readonly gateHeld: boolean;
  readonly paused: boolean;
}

/**
 * What a pass is held to: a node newly given the new thing was admitted, never past a gate that
 * had not held nor while paused; and a rerun over what the pass wrote writes nothing.
 */
export function assertPass(s: MutableSnapshot, seen: PassSeen): void {
  const { before, now } = seen;
  // Nodes reached in this pass (a node admitted before may get it back after a retry).
  const newcomers = seen.givenNow.filter(
    (n) => !seen.givenBefore.has(n) && !(before?.admitted.includes(n) ?? false),
  );
  if (newcomers.length > 0 && before !== undefined && seen.gated) {
    assert.ok(seen.gateHeld, `wave ${now?.wave} given before wave ${before.wave} was proven`);
    assert.ok(!seen.paused, "no wave is given while paused");
  }
  for (const n of newcomers) assert.ok(now?.admitted.includes(n), `${n} given, not admitted`);
  assert.deepEqual(assign(s).writes, [], "a rerun writes nothing");
}

/**
 * The two properties every kind of rollout is held to, as tests of the suite that calls it: the
 * play's own checks after each pass (`gates` names them), and the order independence of its end.
 */
export function waveProperties<E, F extends ClockedFleet>(
  gates: string,
  event: fc.Arbitrary<E>,
  play: (policy: RolloutPolicy, events: readonly E[]) => F,
): void {
  it(gates, () => {
    everyPlay(event, play, { maxLength: 30, numRuns: 150 });
  });

  it("the result is independent of the order changes arrive in", () => {
    everyPlay(event, play, { maxLength: 20, numRuns: 100 }, assertOrderIndependent);
  });
}

/**
 * Plays random event lists (at most `maxLength`) under random policies, `numRuns` times (`play`
 * asserts after each pass), then checks `end` on the fleet each play leaves.
 */
function everyPlay<E, F>(
  event: fc.Arbitrary<E>,
  play: (policy: RolloutPolicy, events: readonly E[]) => F,
  options: { maxLength: number; numRuns: number },
  end: (f: F) => void = () => undefined,
): void {
  fc.assert(
    fc.property(rolloutPolicy, fc.array(event, { maxLength: options.maxLength }), (p, events) =>
      end(play(p, events)),
    ),
    { numRuns: options.numRuns },
  );
}

/** One more step's inputs, then the same pass over the maps filled both ways: the same writes. */
function assertOrderIndependent(f: ClockedFleet): void {
  for (const n of f.nodes)
    f.s.presence.set(n, { ...f.s.presence.get(n)!, heartbeat: after(f.clock + 60) });
  const a = assign(f.s);
  const b = assign(reversed(f.s));
  assert.equal(canonicalJson(a.writes), canonicalJson(b.writes));
  apply(f.s, a);
}
