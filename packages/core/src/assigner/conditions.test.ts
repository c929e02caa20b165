import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { AssignResult } from "./assign.js";
import {
  assignTo,
  build,
  present,
  put,
  reportHave,
  retry,
  snapshot,
  type MutableSnapshot,
  helloEverywhere,
  pass,
  newBuildAfterHealthy,
} from "./fixtures.js";

/** The conditions about nodes a pass said (a rollout's steps have their own tests). */
const said = (r: AssignResult) =>
  r.conditions
    .filter((c) => !c.name.startsWith("rollout"))
    .map((c) => `${c.resolved === true ? "resolved" : "open"} ${c.name}`);

/** n1 ran build 1 healthy, then reported build 2 failing: set back to build 1. */
function setBack(): { s: MutableSnapshot; b1: string; b2: string } {
  const { s, b1, b2 } = newBuildAfterHealthy("n1", "n2");
  pass(s);
  reportHave(s, "n1", "hello", b2, "failing");
  const r = pass(s);
  assert.deepEqual(said(r), ["open set-back-n1-hello"]);
  return { s, b1, b2 };
}

describe("the assigner resolves its own conditions when their cause ends (issue 14.11)", () => {
  it("a set-back superseded by a new build is resolved, once", () => {
    const { s } = setBack();
    const b3 = build(s, "hello", 3);
    const r = pass(s);
    assert.deepEqual(said(r), ["resolved set-back-n1-hello"]);
    const resolved = r.conditions.find((c) => c.name === "set-back-n1-hello");
    assert.equal(resolved?.level, "info");
    assert.equal(resolved?.node, "n1");
    assert.match(resolved?.message ?? "", new RegExp(`build ${b3} is wanted`));
    assert.deepEqual(said(pass(s)), [], "resolved once");
    assert.equal(s.own.conditions.size, 0);
  });

  it("a set-back lifted by a retry, or replaced by a put, is resolved", () => {
    const lifted = setBack();
    retry(lifted.s, "n1", "hello");
    assert.deepEqual(said(pass(lifted.s)), ["resolved set-back-n1-hello"]);
    const pinned = setBack();
    put(pinned.s, "n1", "hello", pinned.b1);
    assert.deepEqual(said(pass(pinned.s)), ["resolved set-back-n1-hello"]);
  });

  it("a set-back stands while the set-back build runs healthy", () => {
    const { s, b1 } = setBack();
    reportHave(s, "n1", "hello", b1, "healthy");
    assert.deepEqual(said(pass(s)), []);
    assert.deepEqual([...s.own.conditions.keys()], ["set-back-n1-hello"]);
  });

  it("a set-back of a module unassigned, or removed from the mesh, is resolved", () => {
    const unassigned = setBack();
    unassigned.s.assignments.clear();
    const r = pass(unassigned.s);
    assert.deepEqual(said(r), ["resolved set-back-n1-hello"]);
    assert.match(r.conditions[0]?.message ?? "", /hello is no longer wanted on n1/);
    const removed = setBack();
    removed.s.assignments.clear();
    removed.s.builds.clear();
    removed.s.candidates.clear();
    removed.s.registrations.clear();
    removed.s.have.clear();
    assert.deepEqual(said(pass(removed.s)), ["resolved set-back-n1-hello"]);
  });

  it("a failing build kept wanted is resolved once it runs healthy, or a new build is wanted", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    pass(s);
    reportHave(s, "n1", "hello", b1, "failing");
    assert.deepEqual(said(pass(s)), ["open failing-n1-hello"]);
    reportHave(s, "n1", "hello", b1, "healthy");
    assert.deepEqual(said(pass(s)), ["resolved failing-n1-hello"]);
    reportHave(s, "n1", "hello", b1, "failing");
    assert.deepEqual(said(pass(s)), ["open failing-n1-hello"]);
    build(s, "hello", 2);
    assert.deepEqual(said(pass(s)), ["resolved failing-n1-hello"]);
  });

  it("a pass over other nodes leaves a node's open conditions alone; a full pass resolves a vanished node's", () => {
    const { s } = setBack();
    s.assignments.clear();
    assert.deepEqual(said(pass(s, ["n2"])), [], "n1 was not decided");
    const open = snapshot();
    open.own.conditions.set("set-back-n9-hello", { node: "n9" });
    open.own.conditions.set("refused-n9", { node: "n9" });
    const r = pass(open);
    assert.deepEqual(said(r), ["resolved refused-n9", "resolved set-back-n9-hello"]);
    assert.match(r.conditions[0]?.message ?? "", /no longer refuses/);
  });

  it("after any sequence of changes and full passes, every open condition's cause stands", () => {
    type Step =
      | { kind: "build" }
      | {
          kind: "report";
          node: "n1" | "n2";
          which: "newest" | "first";
          health: "healthy" | "failing";
        }
      | { kind: "retry"; node: "n1" | "n2" }
      | { kind: "assign" | "unassign"; node: "n1" | "n2" };
    const node = fc.constantFrom<"n1" | "n2">("n1", "n2");
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.constant<Step>({ kind: "build" }),
      fc.record({
        kind: fc.constant("report" as const),
        node,
        which: fc.constantFrom("newest" as const, "first" as const),
        health: fc.constantFrom("healthy" as const, "failing" as const),
      }),
      fc.record({ kind: fc.constant("retry" as const), node }),
      fc.record({ kind: fc.constantFrom("assign" as const, "unassign" as const), node }),
    );
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => {
        const s = snapshot();
        present(s, "n1");
        present(s, "n2");
        const ids = [build(s, "hello", 1)];
        for (const st of steps) {
          if (st.kind === "build") ids.push(build(s, "hello", ids.length + 1));
          else if (st.kind === "report") {
            const id = st.which === "first" ? ids[0] : ids[ids.length - 1];
            reportHave(s, st.node, "hello", id as string, st.health);
          } else if (st.kind === "retry") retry(s, st.node, "hello");
          else if (st.kind === "assign") assignTo(s, st.node, "hello");
          else s.assignments.delete(`${st.node}.hello`);
          pass(s);
          for (const [name, { node: n }] of s.own.conditions) {
            const want = s.own.wants.get(`${n}.hello`);
            if (name.startsWith("set-back-")) assert.equal(want?.rule, "set-back", name);
            else assert.equal(want?.rule, "newest", name);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
