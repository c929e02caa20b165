import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Build } from "@mesh/protocol";
import { OPEN, type Decision } from "../model.js";
import { assignTo, build, cellIn, present, snapshot } from "../fixtures.js";
import { built } from "./built.js";

describe("rule built", () => {
  const table: Array<{ statuses: Build["status"][]; stored?: boolean; expect: RegExp | "open" }> = [
    { statuses: [], expect: /no build of hello has finished/ },
    { statuses: ["building"], expect: /no build of hello has finished/ },
    { statuses: ["failed", "failed"], expect: /2 failed: see `mesh builds hello`/ },
    { statuses: ["built"], stored: false, expect: /no build of hello has finished/ },
    { statuses: ["failed", "built"], expect: "open" },
  ];
  for (const row of table) {
    it(`${row.statuses.join(", ") || "no build"}${row.stored === false ? " (manifest not stored)" : ""}`, () => {
      const s = snapshot();
      present(s, "n1");
      assignTo(s, "all", "hello");
      row.statuses.forEach((status, i) => build(s, "hello", i + 1, { status }));
      if (row.stored === false) s.manifests.clear();
      const d: Decision = built.decide(cellIn(s, "n1", "hello"), OPEN);
      if (row.expect === "open") return assert.equal(d.kind, "open");
      assert.equal(d.kind, "none");
      if (d.kind === "none") assert.match(d.unwanted.reason, row.expect);
    });
  }
});
