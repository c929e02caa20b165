import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { OPEN } from "../model.js";
import {
  assignTo,
  build,
  cellIn,
  helloEverywhere,
  outcome,
  pass,
  present,
  snapshot,
  wantOf,
} from "../fixtures.js";
import { placed } from "./placed.js";

describe("rule placed", () => {
  const table: Array<{ name: string; assigned?: string; present: boolean; expect: string }> = [
    { name: "no assignment", present: true, expect: "none placed" },
    { name: "assigned to another node", assigned: "n2", present: true, expect: "none placed" },
    { name: "assigned to the node", assigned: "n1", present: true, expect: "open" },
    { name: "assigned to all", assigned: "all", present: true, expect: "open" },
    { name: "assigned, never present", assigned: "n1", present: false, expect: "none placed" },
  ];
  for (const row of table) {
    it(`${row.name} → ${row.expect}`, () => {
      const s = snapshot();
      if (row.present) present(s, "n1");
      if (row.assigned !== undefined) assignTo(s, row.assigned, "hello");
      build(s, "hello", 1);
      assert.equal(outcome(placed.decide(cellIn(s, "n1", "hello"), OPEN)), row.expect);
    });
  }

  it("a node gone from presence keeps the wants that stand (its bucket lost and made again); a module newly assigned waits for it", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    assert.equal(wantOf(pass(s), "n1", "hello")?.build, b1);
    s.presence.delete("n1");
    const after = pass(s);
    assert.deepEqual(
      after.writes.filter((w) => w.bucket === "mesh-wants"),
      [],
      "no want written or deleted",
    );
    assert.equal(s.own.wants.get("n1.hello")?.build, b1);
    assignTo(s, "n1", "other");
    build(s, "other", 1);
    assert.equal(outcome(placed.decide(cellIn(s, "n1", "other"), OPEN)), "none placed");
  });
});
