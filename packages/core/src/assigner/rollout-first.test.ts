/**
 * Waves for what is not a plain tools module: the first deploy of a module (decision 0130's
 * "nothing to keep": every node at once), and the tool runtime `node-tools` itself, whose new
 * build goes through the waves like any module's (issue 22 item 4).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Manifest } from "@mesh/protocol";
import {
  after,
  assignTo,
  beat,
  build,
  manifestOf,
  pass,
  present,
  reportHave,
  snapshot,
} from "./fixtures.js";

const NODES = ["n1", "n2", "n3", "n4", "n5"];

/** A runtime's manifest as the composition accepts it: one bundle, one entrypoint, its broker. */
const runtime = (seq: number): Manifest =>
  manifestOf("node-tools", seq, {
    bundles: [
      {
        name: "runtime",
        language: "typescript",
        entrypoints: ["main.ts"],
        digest: String(seq).repeat(64).slice(0, 64),
      },
    ],
    "own-secrets": { broker: { path: "broker.json" } },
  });

describe("waves: a first deploy and the runtime (issue 22)", () => {
  it("a module's first build goes to every node at once: no node has anything to keep", () => {
    const s = snapshot();
    for (const n of NODES) present(s, n);
    assignTo(s, "all", "hello");
    const b1 = build(s, "hello", 1);
    const r = pass(s);
    for (const n of NODES) {
      assert.equal(r.wants.get(`${n}.hello`)?.build, b1, `${n} given the first build`);
      assert.equal(r.wants.get(`${n}.hello`)?.rule, "newest");
    }
    assert.equal(r.rollouts.get("hello")?.status, "done", "nothing rolls out");
  });

  it("a new build of node-tools reaches the canary first; the others keep the runtime they run", () => {
    const s = snapshot();
    for (const n of NODES) present(s, n);
    assignTo(s, "all", "node-tools");
    const t1 = build(s, "node-tools", 1, { manifest: runtime(1) });
    pass(s);
    for (const n of NODES) reportHave(s, n, "node-tools", t1, "healthy");
    pass(s);
    const t2 = build(s, "node-tools", 2, { manifest: runtime(2) });
    pass(s);
    assert.equal(s.own.wants.get("n1.node-tools")?.build, t2, "the canary (its check passed)");
    for (const n of NODES.slice(1)) {
      const want = s.own.wants.get(`${n}.node-tools`);
      assert.equal(want?.build, t1, `${n} keeps its runtime`);
      assert.equal(want?.rule, "waves");
    }
    // The canary proven (healthy, then a heartbeat 30 s later): the next wave is given.
    reportHave(s, "n1", "node-tools", t2, "healthy", { since: after(1) });
    for (const n of NODES) beat(s, n, after(31));
    s.now = after(31);
    pass(s);
    const given = NODES.filter((n) => s.own.wants.get(`${n}.node-tools`)?.build === t2);
    assert.deepEqual(given, ["n1", "n2", "n3"], "the canary, then a batch of 25% (2 of 5)");
  });
});
