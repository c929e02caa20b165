import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Health } from "@mesh/protocol";
import {
  assignTo,
  build,
  cellIn,
  outcome,
  present,
  reportHave,
  retry,
  snapshot,
  wanting,
} from "../fixtures.js";
import { setBack } from "./set-back.js";

/** Reports as `<seq>:<health>`, then `retry` for an operator's retry on n1. */
type Step = `${number}:${Health}` | "retry";

describe("rule set-back", () => {
  const table: Array<{ name: string; reports: Step[]; rule?: "put"; expect: string }> = [
    { name: "not marked", reports: ["1:healthy", "2:healthy"], expect: "want newest 2" },
    {
      name: "marked, back to the healthy one",
      reports: ["1:healthy", "2:failing"],
      expect: "want set-back 1",
    },
    { name: "marked, nothing ran healthy: kept", reports: ["2:failing"], expect: "want newest 2" },
    {
      name: "the only healthy one is marked too",
      reports: ["1:healthy", "1:failing", "2:failing"],
      expect: "want newest 2",
    },
    {
      name: "healthy after failing lifts the mark",
      reports: ["1:healthy", "2:failing", "2:healthy"],
      expect: "want newest 2",
    },
    {
      name: "a retry lifts the mark",
      reports: ["1:healthy", "2:failing", "retry"],
      expect: "want newest 2",
    },
    {
      name: "a failure after the retry marks again",
      reports: ["1:healthy", "2:failing", "retry", "2:failing"],
      expect: "want set-back 1",
    },
    {
      name: "starting does not mark",
      reports: ["1:healthy", "2:starting"],
      expect: "want newest 2",
    },
    {
      name: "a put is never set back",
      reports: ["1:healthy", "2:failing"],
      rule: "put",
      expect: "want put 2",
    },
  ];
  for (const row of table) {
    it(`${row.name} → ${row.expect}`, () => {
      const s = snapshot();
      present(s, "n1");
      assignTo(s, "all", "hello");
      const ids = [build(s, "hello", 1), build(s, "hello", 2)];
      for (const step of row.reports) {
        if (step === "retry") retry(s, "n1", "hello");
        else {
          const [seq, health] = step.split(":") as [string, Health];
          reportHave(s, "n1", "hello", ids[Number(seq) - 1] as string, health);
        }
      }
      const d = setBack.decide(
        cellIn(s, "n1", "hello"),
        wanting(s, "hello", ids[1] as string, row.rule ?? "newest"),
      );
      assert.equal(
        outcome(d),
        row.expect.replace(/\d$/, (n) => ids[Number(n) - 1] as string),
      );
      if (row.name.endsWith("kept") && d.kind === "want") {
        assert.match(d.proposal.reason, /stays wanted .* `mesh retry hello --node n1`/);
      }
    });
  }
});
