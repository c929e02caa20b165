import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { OPEN } from "../model.js";
import { assignTo, build, cellIn, outcome, present, snapshot } from "../fixtures.js";
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
});
