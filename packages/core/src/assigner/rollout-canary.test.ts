import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Presence } from "@mesh/protocol";
import { canaryOf } from "./rollout-canary.js";
import { resolveRolloutPolicy } from "./rollout-policy.js";

/** The default policy on five nodes: a canary of 1, then batches of 2. */
const policy = resolveRolloutPolicy({ nodes: 5 });
const r = { build: "2-b", wave: 1, admitted: ["n1"], waveNodes: ["n1"], policy };

const presence = (node: string, arch: string): [string, Presence] => [
  node,
  {
    node,
    facts: { hostname: node, os: "linux", arch, version: "0.1.0" },
    publicKey: "k",
    heartbeat: "2026-01-01T00:00:00.000Z",
  },
];

describe("a rollout's canary (issue 22 item 5)", () => {
  it("is wave 1's nodes while it is the last wave given, and none before or without a canary", () => {
    assert.deepEqual(canaryOf(r), ["n1"]);
    assert.deepEqual(
      canaryOf({ ...r, policy: { ...policy, canary: 2 }, waveNodes: ["n1", "n4"] }),
      ["n1", "n4"],
    );
    assert.deepEqual(canaryOf({ ...r, wave: 0, waveNodes: [], admitted: [] }), []);
    assert.deepEqual(canaryOf({ ...r, policy: { ...policy, canary: 0 } }), []);
  });

  it("later, the first of the admitted nodes in the rollout's order", () => {
    const later = { ...r, wave: 2, admitted: ["n1", "n2", "n3"], waveNodes: ["n2", "n3"] };
    assert.deepEqual(canaryOf(later), ["n1"]);
    const byArch = { ...later, policy: { ...policy, order: "label=arch" } };
    const facts = new Map([presence("n1", "x64"), presence("n2", "arm64"), presence("n3", "x64")]);
    assert.deepEqual(canaryOf(byArch, facts), ["n2"], "arm64 sorts first");
  });
});
