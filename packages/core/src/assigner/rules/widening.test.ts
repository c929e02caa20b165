import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  build,
  cellIn,
  manifestOf,
  outcome,
  present,
  reportHave,
  snapshot,
  wanting,
  type MutableSnapshot,
} from "../fixtures.js";
import { askId, widen, widening } from "./widening.js";

describe("rule widening", () => {
  it("widen names what a manifest may newly read, call or hold", () => {
    const a = manifestOf("m", 1, { reads: ["x/s"] });
    const b = manifestOf("m", 2, {
      reads: ["x/s", "y/t"],
      calls: ["z/go"],
      "own-secrets": { k: { path: "k" } },
    });
    assert.deepEqual(widen(a, b), ["call z/go", "hold k", "read y/t"]);
    assert.deepEqual(widen(b, a), []);
  });

  it("a mesh part's new build that writes more of the mesh widens it too (decision 0122)", () => {
    const a = manifestOf("mesh-assigner", 1, { reads: ["mesh/have"], writes: ["mesh/wants"] });
    const b = manifestOf("mesh-assigner", 2, {
      reads: ["mesh/have"],
      writes: ["mesh/wants", "mesh/puts"],
    });
    assert.deepEqual(widen(a, b), ["write mesh/puts"]);
    assert.deepEqual(widen(b, a), []);
  });
});

describe("rule widening: its table", () => {
  const table: Array<{
    name: string;
    previous?: 1;
    widens: boolean;
    answer?: "yes" | "no";
    failed?: boolean;
    rule?: "put";
    expect: string;
  }> = [
    { name: "a first want asks nothing", widens: true, expect: "want newest 2" },
    { name: "no widening", previous: 1, widens: false, expect: "want newest 2" },
    {
      name: "widening, no answer: previous stands",
      previous: 1,
      widens: true,
      expect: "want widening 1",
    },
    {
      name: "answered no: previous stands",
      previous: 1,
      widens: true,
      answer: "no",
      expect: "want widening 1",
    },
    {
      name: "answered yes: advances",
      previous: 1,
      widens: true,
      answer: "yes",
      expect: "want newest 2",
    },
    {
      name: "previous marked failing: nothing",
      previous: 1,
      widens: true,
      failed: true,
      expect: "none widening",
    },
    { name: "a put is not held", previous: 1, widens: true, rule: "put", expect: "want put 2" },
  ];
  for (const row of table) {
    it(`${row.name} → ${row.expect}`, () => {
      const s: MutableSnapshot = snapshot();
      present(s, "n1");
      const b1 = build(s, "hello", 1);
      const b2 = build(s, "hello", 2, {
        manifest: manifestOf("hello", 2, row.widens ? { calls: ["x/go"] } : {}),
      });
      const id = askId("hello", b2, ["call x/go"]);
      if (row.previous !== undefined) {
        s.own.wants.set("n1.hello", {
          build: b1,
          manifestDigest: "d",
          fingerprint: "",
          rule: "newest",
          reason: "r",
        });
      }
      if (row.answer !== undefined) s.answers.set(id, { answer: row.answer, by: "ada", at: s.now });
      if (row.failed === true) reportHave(s, "n1", "hello", b1, "failing");
      const d = widening.decide(
        cellIn(s, "n1", "hello"),
        wanting(s, "hello", b2, row.rule ?? "newest"),
      );
      assert.equal(
        outcome(d),
        row.expect.replace(/\d$/, (n) => (n === "1" ? b1 : b2)),
      );
      const asked = d.kind !== "open" && d.ask !== undefined;
      assert.equal(asked, row.expect.startsWith("want widening") || row.expect.startsWith("none"));
      if (asked) assert.equal(d.ask?.id, id);
    });
  }
});
