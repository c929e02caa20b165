import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cellIn, outcome, wanting } from "../fixtures.js";
import { fleet, record, step } from "../rollout-fleet.js";
import { halt } from "./halt.js";

describe("rule halt", () => {
  /** A fleet of 3 whose canary failed build 2: the rollout is halted. */
  function halted() {
    const f = fleet(3);
    for (let i = 0; i < 3; i++) step(f, 5, () => "failing");
    assert.equal(record(f)?.status, "failed");
    return f;
  }
  const table: Array<{ name: string; node: string; proposal: "b1" | "b2"; expect: string }> = [
    { name: "the canary that failed", node: "n1", proposal: "b2", expect: "want halt b1" },
    { name: "a node never reached", node: "n3", proposal: "b2", expect: "want halt b1" },
    {
      name: "a proposal of the previous build",
      node: "n2",
      proposal: "b1",
      expect: "want newest b1",
    },
  ];
  for (const row of table) {
    it(`${row.name} → ${row.expect}`, () => {
      const f = halted();
      const id = row.proposal === "b2" ? f.b2 : f.b1;
      const d = halt.decide(cellIn(f.s, row.node, "hello"), wanting(f.s, "hello", id, "newest"));
      assert.equal(outcome(d), row.expect.replace("b1", f.b1).replace("b2", f.b2));
      if (d.kind === "want" && d.proposal.rule === "halt") {
        assert.match(d.proposal.reason, /halted .*mesh rollout retry hello/);
        // The canary went back; a node the rollout never reached was never given the build.
        const said =
          row.node === "n1" ? /n1 is set back to build/ : /n3 was never given it and keeps build/;
        assert.match(d.proposal.reason, said);
      }
    });
  }

  it("a canary whose build before was still starting (never healthy yet) goes back to it, not to nothing (a Go module on a cold CI cache was left running nothing)", () => {
    const f = halted();
    const record = f.s.have.get("n1.hello");
    assert.ok(record !== undefined);
    const starting = (h: (typeof record.history)[number]) =>
      h.build === f.b1 ? { ...h, health: "starting" as const } : h;
    f.s.have.set("n1.hello", { ...record, history: record.history.map(starting) });
    // The pass that halts finds the canary wanting the build that failed.
    const want = f.s.own.wants.get("n1.hello");
    assert.ok(want !== undefined);
    f.s.own.wants.set("n1.hello", { ...want, build: f.b2 });
    const d = halt.decide(cellIn(f.s, "n1", "hello"), wanting(f.s, "hello", f.b2, "newest"));
    assert.equal(outcome(d), `want halt ${f.b1}`);
  });

  it("a rollout that is not halted passes the proposal on", () => {
    const f = fleet(3);
    step(f, 5);
    const d = halt.decide(cellIn(f.s, "n1", "hello"), wanting(f.s, "hello", f.b2, "newest"));
    assert.equal(outcome(d), `want newest ${f.b2}`);
  });
});
