/** Properties of the config rollout (decision 0131), over random fleets, policies and event orders. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { RolloutPolicy } from "@mesh/protocol";
import { canonicalJson } from "../fingerprint.js";
import { assign } from "./assign.js";
import {
  KEY,
  configFleet,
  configRecord,
  prepareConfig,
  request,
  steerConfig,
  type ConfigFleet,
} from "./config-fleet.js";
import { after, apply, pass, reversed } from "./fixtures.js";

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
    action: fc.constantFrom("pause", "resume", "promote", "abort" as const),
  }),
  fc.record({ kind: fc.constant("request" as const), value: fc.constantFrom("Hi", "Hey", 7) }),
);

type Event = typeof event extends fc.Arbitrary<infer T> ? T : never;

/** The nodes the assigner gave the request's value to (their own value, written for it). */
function given(f: ConfigFleet): Set<string> {
  const at = f.s.configRollouts.get(KEY)?.at;
  return new Set(f.nodes.filter((n) => f.s.own.config.get(`${KEY}.${n}`)?.rollout === at));
}

/** Whether a node ran the value healthy for min-healthy, on what the pass reads. */
function proven(f: ConfigFleet, node: string): boolean {
  const r = configRecord(f);
  const have = f.s.have.get(`${node}.hello`)?.current;
  const beat = f.s.presence.get(node)?.heartbeat;
  if (r === undefined || have?.config?.values["greeting"] !== r.fingerprint) return false;
  if (have.health !== "healthy" || beat === undefined) return false;
  const since = Math.max(Date.parse(have.since), Date.parse(have.config.since));
  return r.policy.minHealthyMs === 0 || Date.parse(beat) - since >= r.policy.minHealthyMs;
}

function failingNow(f: ConfigFleet, node: string): boolean {
  return f.s.have.get(`${node}.hello`)?.current?.health === "failing";
}

/** Plays the events; after each pass, checks that no wave came before its gate held. */
function play(p: RolloutPolicy, events: readonly Event[]): ConfigFleet {
  const f = configFleet(5, p);
  request(f, "Hi");
  const broken = new Set<string>();
  for (const e of events) {
    if (e.kind === "fail") broken.add(e.node);
    if (e.kind === "steer" && f.s.configRollouts.has(KEY)) steerConfig(f, e.action);
    if (e.kind === "request") request(f, e.value);
    const before = configRecord(f);
    const request0 = f.s.configRollouts.get(KEY)?.at;
    const givenBefore = given(f);
    prepareConfig(f, e.kind === "tick" ? e.seconds : 1, (n, value) =>
      broken.has(n) && value !== "Hello" ? "failing" : "healthy",
    );
    const gateHeld =
      before === undefined ||
      before.request !== request0 ||
      before.waveNodes.every((n) => proven(f, n) || failingNow(f, n));
    const paused = f.s.configRollouts.get(KEY)?.steer?.action === "pause";
    const promoted = f.s.configRollouts.get(KEY)?.steer?.action === "promote";
    pass(f.s);
    const now = configRecord(f);
    const newcomers = [...given(f)].filter(
      (n) => !givenBefore.has(n) && !(before?.admitted.includes(n) ?? false),
    );
    if (newcomers.length > 0 && before !== undefined && before.request === request0 && !promoted) {
      assert.ok(gateHeld, `wave ${now?.wave} given before wave ${before.wave} was proven`);
      assert.ok(!paused, "no wave is given while paused");
    }
    for (const n of newcomers) assert.ok(now?.admitted.includes(n), `${n} given, not admitted`);
    if (now?.status === "failed" || now?.status === "aborted") {
      assert.deepEqual(given(f), new Set(), "a halt takes every node value back");
    }
    assert.deepEqual(assign(f.s).writes, [], "a rerun writes nothing");
  }
  return f;
}

describe("config rollout: properties (decision 0131)", () => {
  it("no node is given the value past a gate that has not held; a halt takes it back; reruns write nothing", () => {
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
