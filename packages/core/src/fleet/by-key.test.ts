import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Assignment, Summary } from "@mesh/protocol";
import { allNodesOf, cellsByModule, differencesIfWhole } from "./by-key.js";

const assigned = (...keys: string[]) => ({
  assignments: new Map<string, Assignment>(
    keys.map((key) => [key, { by: "ada", at: "2026-01-01T00:00:00.000Z" }]),
  ),
});

describe("the fleet read by key, its pure half", () => {
  it("places a node's own assignment on that node, `all` on every node present, and leaving cells", () => {
    const present = ["n1", "n2"];
    const byModule = cellsByModule(
      assigned("n3.alpha", "all.beta", "n1.gamma", "not a key"),
      present,
      [{ node: "n4", module: "beta" }],
    );
    assert.deepEqual(Object.fromEntries(byModule), {
      alpha: ["n3"],
      beta: ["n1", "n2", "n4"],
      gamma: ["n1"],
    });
    assert.deepEqual(allNodesOf(present, byModule), ["n1", "n2", "n3", "n4"]);
  });

  it("gives every module placed everywhere the same list of present nodes, not a copy each", () => {
    const present = ["n1", "n2"];
    const byModule = cellsByModule(assigned("all.alpha", "all.beta"), present, []);
    assert.equal(byModule.get("alpha"), present);
    assert.equal(byModule.get("beta"), present);
    assert.deepEqual(allNodesOf(present, byModule), present);
  });

  it("takes the summary's differences only when it carries all of them", () => {
    const difference = {
      key: "n1.alpha",
      difference: {},
    } as Summary["differences"]["first"][number];
    const whole = { differences: { total: 1, first: [difference] } } as unknown as Summary;
    const part = { differences: { total: 2, first: [difference] } } as unknown as Summary;
    assert.deepEqual([...(differencesIfWhole(whole)?.keys() ?? [])], ["n1.alpha"]);
    assert.equal(differencesIfWhole(part), undefined);
  });
});
