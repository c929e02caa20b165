import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Manifest } from "@mesh/protocol";
import { runCellRules } from "../assign.js";
import type { Cell, Proposal } from "../model.js";
import {
  assignTo,
  build,
  cellIn,
  manifestOf,
  present,
  reportHave,
  snapshot,
  type MutableSnapshot,
} from "../fixtures.js";
import { checked } from "./checked.js";
import { RULES } from "./index.js";
import { RULE_ORDER } from "@mesh/protocol";

/** A runtime manifest; `twice` makes one the composition check refuses (two runtime bundles). */
function runtime(seq: number, twice = false): Manifest {
  const bundle = (name: string, d: string) => ({
    name,
    language: "typescript" as const,
    entrypoints: [`${name}.ts`],
    digest: d.repeat(64),
  });
  return manifestOf("node-tools", seq, {
    bundles: twice ? [bundle("a", "b"), bundle("b", "c")] : [bundle("runtime", "a")],
    "own-secrets": { broker: { path: "broker.json" } },
  });
}

function decide(s: MutableSnapshot) {
  const cells = new Map<string, Cell>();
  const proposals = new Map<string, Proposal>();
  for (const m of ["hello", "node-tools"]) {
    const cell = cellIn(s, "n1", m);
    cells.set(m, cell);
    const d = runCellRules(cell);
    if (d.kind === "want") proposals.set(m, d.proposal);
  }
  return checked.decide(
    { node: "n1", cells },
    { node: "n1", proposals, unwanted: new Map(), composition: undefined, refused: [] },
  );
}

describe("rule checked", () => {
  const table: Array<{ name: string; previous: boolean; failed?: boolean; expect: string }> = [
    { name: "refused, a previous want: it stands", previous: true, expect: "checked 1" },
    { name: "refused, nothing before: not wanted", previous: false, expect: "unwanted" },
    {
      name: "refused, the previous build marked failing: not wanted",
      previous: true,
      failed: true,
      expect: "unwanted",
    },
  ];
  for (const row of table) {
    it(`${row.name}`, () => {
      const s = snapshot();
      present(s, "n1");
      assignTo(s, "all", "hello");
      assignTo(s, "all", "node-tools");
      const t1 = build(s, "node-tools", 1, { manifest: runtime(1) });
      build(s, "node-tools", 2, { manifest: runtime(2, true) });
      build(s, "hello", 1);
      if (row.previous) {
        s.own.wants.set("n1.node-tools", {
          build: t1,
          manifestDigest: "d",
          fingerprint: "",
          rule: "newest",
          reason: "r",
        });
      }
      if (row.failed === true) reportHave(s, "n1", "node-tools", t1, "failing");
      const set = decide(s);
      assert.equal(set.composition?.ok, true, "the set it ends with composes");
      assert.ok(set.refused.length > 0, "the refusal is kept for the verdict");
      assert.ok(set.proposals.has("hello"), "a module the check does not blame stays");
      const tools = set.proposals.get("node-tools");
      if (row.expect === "unwanted") {
        assert.equal(tools, undefined);
        assert.equal(set.unwanted.get("n1.node-tools")?.rule, "checked");
      } else {
        assert.equal(tools?.rule, "checked");
        assert.equal(tools?.usable.build.build, t1);
      }
    });
  }

  it("an accepted set passes unchanged", () => {
    const s = snapshot();
    present(s, "n1");
    assignTo(s, "all", "hello");
    build(s, "hello", 1);
    const set = decide(s);
    assert.equal(set.composition?.ok, true);
    assert.deepEqual(set.refused, []);
    assert.equal(set.proposals.get("hello")?.rule, "newest");
  });

  it("composes on the node's root from its presence, as the controller's plan does", () => {
    const s = snapshot();
    present(s, "n1", { root: "var/lib/mesh" });
    assignTo(s, "all", "hello");
    build(s, "hello", 1);
    const set = decide(s);
    // The controller refuses a node whose root is not absolute: the check must not accept it.
    assert.equal(set.proposals.has("hello"), false);
    assert.equal(set.unwanted.get("n1.hello")?.rule, "checked");
    assert.ok(
      set.refused.some((line) => line.includes(`"var/lib/mesh" is not an absolute path`)),
      set.refused.join("\n"),
    );
  });
});

describe("the chain", () => {
  it("runs protocol's RULE_ORDER, every cell rule before the node rules", () => {
    assert.deepEqual(
      RULES.map((r) => r.name),
      [...RULE_ORDER],
    );
    const firstNode = RULES.findIndex((r) => r.scope === "node");
    assert.ok(RULES.slice(firstNode).every((r) => r.scope === "node"));
  });
});
