/** Properties of the rollout rules (issue 22), over random fleets, policies and event orders. */
import { describe } from "node:test";
import fc from "fast-check";
import type { RolloutPolicy } from "@mesh/protocol";
import { pass } from "./fixtures.js";
import { fleet, prepare, record, steer, wanting, type Fleet } from "./rollout-fleet.js";
import { assertPass, failEvent, steerEvent, tickEvent, waveProperties } from "./wave-properties.js";

const event = fc.oneof(tickEvent, failEvent, steerEvent("pause", "resume", "abort", "retry"));

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
    assertPass(f.s, {
      before,
      now: record(f),
      givenBefore: wantedBefore,
      givenNow: wanting(f, f.b2),
      gated: before?.build === f.b2 && before.attempt === record(f)?.attempt,
      gateHeld,
      paused: f.s.rolloutSteers.get("hello")?.action === "pause",
    });
  }
  return f;
}

describe("rollout rules: properties (issue 22)", () => {
  waveProperties(
    "no want advances a node past a gate that has not held; reruns write nothing",
    event,
    play,
  );
});
