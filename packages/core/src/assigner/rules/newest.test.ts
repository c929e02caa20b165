import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Build } from "@mesh/protocol";
import { OPEN, type Decision } from "../model.js";
import { assignTo, build, cellIn, outcome, present, snapshot } from "../fixtures.js";
import { newest } from "./newest.js";

describe("rule newest", () => {
  const table: Array<{ statuses: Build["status"][]; wanted: number; reason: RegExp }> = [
    { statuses: ["built"], wanted: 1, reason: /of candidate 1$/ },
    { statuses: ["built", "built"], wanted: 2, reason: /of candidate 2$/ },
    { statuses: ["built", "failed"], wanted: 1, reason: /newer: .* failed/ },
    { statuses: ["built", "building", "built"], wanted: 3, reason: /of candidate 3$/ },
  ];
  for (const row of table) {
    it(`${row.statuses.join(", ")} → candidate ${row.wanted}`, () => {
      const s = snapshot();
      present(s, "n1");
      assignTo(s, "all", "hello");
      const ids = row.statuses.map((status, i) => build(s, "hello", i + 1, { status }));
      const d = newest.decide(cellIn(s, "n1", "hello"), OPEN);
      assert.equal(outcome(d), `want newest ${ids[row.wanted - 1]}`);
      if (d.kind === "want") assert.match(d.proposal.reason, row.reason);
    });
  }

  it("leaves a decided cell alone, and carries an earlier rule's notes", () => {
    const s = snapshot();
    present(s, "n1");
    const id = build(s, "hello", 1);
    const none: Decision = { kind: "none", unwanted: { rule: "placed", reason: "x" } };
    assert.equal(newest.decide(cellIn(s, "n1", "hello"), none), none);
    const d = newest.decide(cellIn(s, "n1", "hello"), { kind: "open", notes: ["a note"] });
    assert.equal(outcome(d), `want newest ${id}`);
    if (d.kind === "want") assert.match(d.proposal.reason, /; a note$/);
  });
});
