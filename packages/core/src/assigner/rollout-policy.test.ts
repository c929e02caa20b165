import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Presence, RolloutPolicy } from "@mesh/protocol";
import { countOf, orderNodes, resolveRolloutPolicy } from "./rollout-policy.js";

describe("rollout policy", () => {
  const table: Array<{
    name: string;
    override?: RolloutPolicy;
    manifest?: RolloutPolicy;
    nodes: number;
    expect: Partial<ReturnType<typeof resolveRolloutPolicy>>;
  }> = [
    {
      name: "the default on 8 nodes",
      nodes: 8,
      expect: { canary: 1, batch: 2, minHealthyMs: 30_000, maxFailing: 0, source: "default" },
    },
    { name: "the default on one node", nodes: 1, expect: { canary: 1, batch: 1 } },
    {
      name: "batch 100% alone: all at once",
      override: { batch: "100%" },
      nodes: 9,
      expect: { canary: 0, batch: 9 },
    },
    {
      name: "batch 100% with a canary written",
      override: { batch: "100%", canary: 2 },
      nodes: 9,
      expect: { canary: 2, batch: 9 },
    },
    {
      name: "the operator's over the manifest's, field by field",
      manifest: { batch: "50%", "min-healthy": "1m" },
      override: { "min-healthy": "10s" },
      nodes: 4,
      expect: { batch: 2, minHealthyMs: 10_000, source: "operator" },
    },
    {
      name: "max-failing as a share rounds down",
      override: { "max-failing": "10%" },
      nodes: 15,
      expect: { maxFailing: 1 },
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const got = resolveRolloutPolicy({
        override: row.override,
        manifest: row.manifest,
        nodes: row.nodes,
      });
      for (const [k, v] of Object.entries(row.expect))
        assert.equal(got[k as keyof typeof got], v, k);
    });
  }

  it("counts: nodes capped at the fleet, shares rounded up", () => {
    assert.equal(countOf(5, 3), 3);
    assert.equal(countOf("25%", 3), 1);
    assert.equal(countOf("0%", 3), 0);
  });

  it("orders: by name, random by build (stable), by a presence fact", () => {
    const nodes = ["c", "a", "b", "d"];
    const facts = (arch: string) =>
      ({ facts: { hostname: "h", os: "linux", arch, version: "1" } }) as Presence;
    const presence = new Map<string, Presence>([
      ["a", facts("x86")],
      ["b", facts("arm")],
      ["c", facts("arm")],
    ]);
    assert.deepEqual(orderNodes(nodes, "name", "1-a", presence), ["a", "b", "c", "d"]);
    assert.deepEqual(orderNodes(nodes, "label=arch", "1-a", presence), ["b", "c", "a", "d"]);
    const r1 = orderNodes(nodes, "random", "1-a", presence);
    assert.deepEqual(orderNodes([...nodes].reverse(), "random", "1-a", presence), r1);
    assert.deepEqual([...r1].sort(), ["a", "b", "c", "d"]);
  });
});
