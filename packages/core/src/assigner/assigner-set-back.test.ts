/** assignerSetBack (decision 0191): rule 5 for the assigner's own cells, as a table. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Build, Have, Want } from "@mesh/protocol";
import { assignerSetBack, foldHave } from "./assigner-set-back.js";
import type { HaveRecord } from "./snapshot.js";

const T0 = "2026-01-01T00:00:00.000Z";
const D = (c: string) => c.repeat(64);
const built = (id: string, status: Build["status"] = "built"): Build => ({
  module: "mesh-assigner",
  build: id,
  status,
  candidate: Number(id.split("-")[0]),
  ...(status === "built" ? { manifestDigest: D(id[0] as string) } : {}),
  bundles: [],
  log: "",
  timings: { started: T0 },
});
const BUILDS = new Map([
  ["1-a", built("1-a")],
  ["2-b", built("2-b")],
  ["3-c", built("3-c", "failed")],
]);
const want = (build: string, rule: Want["rule"] = "newest"): Want => ({
  build,
  manifestDigest: D("f"),
  fingerprint: "",
  rule,
  reason: "r",
});
const report = (build: string, health: Have["health"]): Have => ({
  build,
  fingerprint: "x",
  health,
  since: T0,
  restarts: 0,
});
/** A history folded as the mirror folds it: one revision per report, from 1. */
const history = (...reports: Have[]): HaveRecord =>
  reports.reduce<HaveRecord>((r, h, i) => foldHave(r, h, i + 1), {
    current: undefined,
    history: [],
  });

describe("assignerSetBack", () => {
  const cases: Array<{
    name: string;
    want: Want | undefined;
    have: HaveRecord | undefined;
    lifted?: number;
    expect: string | undefined;
  }> = [
    {
      name: "a new build failing where 1-a ran healthy: back to 1-a",
      want: want("2-b"),
      have: history(report("1-a", "healthy"), report("2-b", "starting"), report("2-b", "failing")),
      expect: "1-a",
    },
    {
      name: "no want: nothing",
      want: undefined,
      have: history(report("1-a", "healthy"), report("2-b", "failing")),
      expect: undefined,
    },
    {
      name: "a put is never set back",
      want: want("2-b", "put"),
      have: history(report("1-a", "healthy"), report("2-b", "failing")),
      expect: undefined,
    },
    {
      name: "the wanted build is not marked (healthy again): nothing",
      want: want("2-b"),
      have: history(report("1-a", "healthy"), report("2-b", "failing"), report("2-b", "healthy")),
      expect: undefined,
    },
    {
      name: "already set back: the want is the healthy build, nothing more",
      want: want("1-a", "set-back"),
      have: history(report("1-a", "healthy"), report("2-b", "failing"), report("1-a", "healthy")),
      expect: undefined,
    },
    {
      name: "no other build ran healthy: it stays failing (the host restarts it)",
      want: want("2-b"),
      have: history(report("2-b", "failing")),
      expect: undefined,
    },
    {
      name: "a healthy build that is no longer usable is skipped for an older one",
      want: want("2-b"),
      have: history(report("1-a", "healthy"), report("3-c", "healthy"), report("2-b", "failing")),
      expect: "1-a",
    },
    {
      name: "a retry lifted the mark: nothing",
      want: want("2-b"),
      have: history(report("1-a", "healthy"), report("2-b", "failing")),
      lifted: 2,
      expect: undefined,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out = assignerSetBack({
        node: "n1",
        module: "mesh-assigner",
        want: c.want,
        have: c.have,
        builds: BUILDS,
        lifted: c.lifted ?? 0,
      });
      assert.equal(out?.build, c.expect);
      if (out !== undefined) {
        assert.equal(out.rule, "set-back");
        assert.equal(out.manifestDigest, BUILDS.get(out.build)?.manifestDigest);
        assert.match(out.reason, /by the controller.*decision 0191/);
      }
    });
  }

  it("what it answers, it does not answer again (the want it wrote is not marked)", () => {
    const have = history(report("1-a", "healthy"), report("2-b", "failing"));
    const first = assignerSetBack({
      node: "n1",
      module: "mesh-assigner",
      want: want("2-b"),
      have,
      builds: BUILDS,
      lifted: 0,
    });
    assert.ok(first !== undefined);
    const again = assignerSetBack({
      node: "n1",
      module: "mesh-assigner",
      want: first,
      have,
      builds: BUILDS,
      lifted: 0,
    });
    assert.equal(again, undefined);
  });
});
