/** Properties of the config rollout (decision 0131), over random fleets, policies and event orders. */
import assert from "node:assert/strict";
import { describe } from "node:test";
import fc from "fast-check";
import type { RolloutPolicy } from "@mesh/protocol";
import {
  KEY,
  configFleet,
  configRecord,
  prepareConfig,
  request,
  steerConfig,
  type ConfigFleet,
} from "./config-fleet.js";
import { pass } from "./fixtures.js";
import { assertPass, failEvent, steerEvent, tickEvent, waveProperties } from "./wave-properties.js";

const event = fc.oneof(
  tickEvent,
  failEvent,
  steerEvent("pause", "resume", "promote", "abort"),
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
    if (now?.status === "failed" || now?.status === "aborted") {
      assert.deepEqual(given(f), new Set(), "a halt takes every node value back");
    }
    assertPass(f.s, {
      before,
      now,
      givenBefore,
      givenNow: [...given(f)],
      gated: before !== undefined && before.request === request0 && !promoted,
      gateHeld,
      paused,
    });
  }
  return f;
}

describe("config rollout: properties (decision 0131)", () => {
  waveProperties(
    "no node is given the value past a gate that has not held; a halt takes it back; reruns write nothing",
    event,
    play,
  );
});
