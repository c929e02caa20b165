import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { OPEN } from "../model.js";
import { assignTo, build, cellIn, outcome, present, put, snapshot } from "../fixtures.js";
import { put as putRule } from "./put.js";

describe("rule put", () => {
  const table: Array<{ name: string; puts: Array<[string, number]>; expect: string }> = [
    { name: "no put", puts: [], expect: "open" },
    { name: "the node's own put", puts: [["n1", 1]], expect: "want put 1" },
    { name: "a put on all", puts: [["all", 2]], expect: "want put 2" },
    {
      name: "the node's own before all",
      puts: [
        ["all", 2],
        ["n1", 1],
      ],
      expect: "want put 1",
    },
    { name: "another node's put", puts: [["n2", 1]], expect: "open" },
    { name: "a put to a failed build", puts: [["n1", 3]], expect: "open" },
  ];
  for (const row of table) {
    it(`${row.name} → ${row.expect}`, () => {
      const s = snapshot();
      present(s, "n1");
      assignTo(s, "all", "hello");
      const ids = [
        build(s, "hello", 1),
        build(s, "hello", 2),
        build(s, "hello", 3, { status: "failed" }),
      ];
      for (const [target, seq] of row.puts) put(s, target, "hello", ids[seq - 1] as string);
      const d = putRule.decide(cellIn(s, "n1", "hello"), OPEN);
      const expected = row.expect.replace(/\d$/, (n) => ids[Number(n) - 1] as string);
      assert.equal(outcome(d), expected);
      if (row.name === "a put to a failed build" && d.kind === "open") {
        assert.match(d.notes.join(), /not honoured: it is failed/);
      }
    });
  }
});
