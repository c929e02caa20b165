import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Rule } from "@mesh/protocol";
import { differenceOf } from "./difference.js";
import { snapshot } from "./fixtures.js";

describe("differenceOf: a placed module nothing is wanted of, while nothing runs", () => {
  const table: Array<{ rule: Rule; said: boolean }> = [
    // A halted first rollout left the soak's pulse assigned, unwanted and unexplained.
    { rule: "halt", said: true },
    { rule: "widening", said: true },
    { rule: "checked", said: false },
    { rule: "placed", said: false },
    { rule: "built", said: false },
  ];
  for (const row of table) {
    it(`held back by ${row.rule}: ${row.said ? "a difference says why" : "no difference"}`, () => {
      const reason = `why ${row.rule} holds pulse back`;
      const d = differenceOf(snapshot(), "n1", "pulse", undefined, { rule: row.rule, reason });
      if (row.said) assert.deepEqual(d?.reasons, [`nothing is wanted: ${reason}`]);
      else assert.equal(d, undefined);
    });
  }
});
