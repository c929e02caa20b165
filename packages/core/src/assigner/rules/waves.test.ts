import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cellIn, outcome, wanting } from "../fixtures.js";
import { fleet, step } from "../rollout-fleet.js";
import { waves } from "./waves.js";

describe("rule waves", () => {
  // A fleet of 4 (batches of 1) after one step: n1, the canary, is given build 2; n2..n4 are not.
  const table: Array<{ name: string; node: string; proposal: "b2" | "b1"; expect: string }> = [
    { name: "the canary, admitted", node: "n1", proposal: "b2", expect: "want newest b2" },
    { name: "a node not reached", node: "n3", proposal: "b2", expect: "want waves b1" },
    { name: "a proposal of another build", node: "n3", proposal: "b1", expect: "want newest b1" },
  ];
  for (const row of table) {
    it(`${row.name} → ${row.expect}`, () => {
      const f = fleet(4);
      step(f, 10);
      const id = row.proposal === "b2" ? f.b2 : f.b1;
      const d = waves.decide(cellIn(f.s, row.node, "hello"), wanting(f.s, "hello", id, "newest"));
      assert.equal(outcome(d), row.expect.replace("b1", f.b1).replace("b2", f.b2));
      if (row.expect.startsWith("want waves") && d.kind === "want") {
        assert.match(d.proposal.reason, /n3 is in wave 3 of 4/);
      }
    });
  }

  it("a put on one node is the operator's: never held back", () => {
    const f = fleet(4);
    step(f, 10);
    const d = waves.decide(cellIn(f.s, "n3", "hello"), wanting(f.s, "hello", f.b2, "put"));
    assert.equal(outcome(d), `want put ${f.b2}`);
  });
});
