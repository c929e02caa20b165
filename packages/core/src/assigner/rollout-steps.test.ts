import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Rollout } from "@mesh/protocol";
import { canaryRollout } from "../testing/index.js";
import { stepConditions } from "./rollout-steps.js";

const policy0 = canaryRollout.policy;
const wave2: Rollout = {
  ...canaryRollout,
  wave: 2,
  admitted: ["n1", "n2", "n3"],
  waveNodes: ["n2", "n3"],
};
const failed: Rollout = {
  ...wave2,
  status: "failed",
  failed: { reason: "n2 failed", nodes: [{ node: "n2", error: "exited with 1" }] },
};

/** What each condition says, in short: its name, its level, resolved or not, its words. */
const said = (before: Rollout | undefined, after: Rollout | undefined) =>
  stepConditions("hello", before, after).map((c) => ({
    name: c.name,
    level: c.level,
    resolved: c.resolved === true,
    message: c.message,
  }));

describe("a rollout's steps as conditions (issue 22 item 5)", () => {
  it("the canary given is said under rollout-<module>, naming the node and the gate", () => {
    const [c, ...rest] = said(undefined, canaryRollout);
    assert.deepEqual(rest, []);
    assert.deepEqual([c?.name, c?.level, c?.resolved], ["rollout-hello", "info", false]);
    assert.match(c?.message ?? "", /build 2-b: the canary \(wave 1 of 3\) given to n1/);
    assert.match(c?.message ?? "", /healthy for 30s/);
  });

  it("each later wave is said once; a record that did not move says nothing (a rerun)", () => {
    const [c] = said(canaryRollout, wave2);
    assert.match(c?.message ?? "", /wave 2 of 3 given to n2, n3/);
    assert.deepEqual(said(wave2, wave2), []);
    assert.deepEqual(said(wave2, { ...wave2, waiting: "other words" }), []);
  });

  it("a pause is said with what it waits for", () => {
    const [c] = said(wave2, { ...wave2, status: "paused", waiting: "a resume" });
    assert.deepEqual([c?.name, c?.level], ["rollout-hello", "info"]);
    assert.match(c?.message ?? "", /paused at wave 2 of 3: a resume/);
  });

  it("the end is said resolved: a done rollout leaves nothing open", () => {
    const done = { ...wave2, status: "done" as const, wave: 3, admitted: ["n1", "n2", "n3", "n4"] };
    const [c, ...rest] = said(wave2, done);
    assert.deepEqual(rest, []);
    assert.deepEqual([c?.name, c?.resolved], ["rollout-hello", true]);
    assert.match(c?.message ?? "", /done: every node of 4 runs it/);
  });

  it("a halt is said as an error under both names; a new build resolves rollout-failed-<module>", () => {
    const halt = said(wave2, failed);
    assert.deepEqual(
      halt.map((c) => [c.name, c.level, c.resolved]),
      [
        ["rollout-failed-hello", "error", false],
        ["rollout-hello", "error", false],
      ],
    );
    assert.match(halt[0]?.message ?? "", /n2 \(exited with 1\).*set back to build 1-a/);
    assert.match(halt[0]?.message ?? "", /mesh rollout retry hello/);
    const next = said(failed, { ...canaryRollout, build: "3-c", from: ["1-a"] });
    const lifted = next.find((c) => c.name === "rollout-failed-hello");
    assert.deepEqual([lifted?.resolved, lifted?.level], [true, "info"]);
    assert.match(lifted?.message ?? "", /no longer stands: build 3-c rolls out/);
  });

  it("a wave of 1,001 nodes and a halt of 300 with long errors fit a condition (at most 4,000 characters): five named, the rest counted", () => {
    const many = Array.from({ length: 1001 }, (_, i) => `sim-${String(i).padStart(5, "0")}`);
    const all = {
      ...canaryRollout,
      admitted: many,
      waveNodes: many,
      waves: 1,
      policy: { ...policy0 },
    };
    const [given] = said(undefined, all);
    assert.ok((given?.message.length ?? 0) <= 4000, `${given?.message.length} characters`);
    assert.match(
      given?.message ?? "",
      /given to sim-00000, sim-00001, sim-00002, sim-00003, sim-00004 and 996 more/,
    );
    const nodes = many
      .slice(0, 300)
      .map((node) => ({ node, error: `exited with 1: ${"x".repeat(2_000)}` }));
    const reason = nodes.map((n) => `${n.node}: ${n.error}`).join("; ");
    const halt = said(all, { ...all, status: "failed", failed: { reason, nodes } });
    for (const c of halt)
      assert.ok(c.message.length <= 4000, `${c.name}: ${c.message.length} characters`);
    assert.match(halt[0]?.message ?? "", /and 295 more; every node given it is set back/);
  });
});
