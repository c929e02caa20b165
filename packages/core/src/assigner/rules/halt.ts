/**
 * Rule 6, halt: a rollout that failed (a node failing, not healthy within the deadline, more
 * than `max-failing`) or was aborted stops the build everywhere at once: no further node is given
 * it, and every node that got it goes back to the build it last ran healthy (decision 0130).
 * A node that ran nothing else healthy is not wanted the module. It lasts until `mesh rollout
 * retry` or a new build.
 */
import type { Cell, Decision } from "../model.js";
import { fallbackOf, rolled } from "./rolled.js";
import type { CellRule } from "./rule.js";

export const halt: CellRule<"halt"> = {
  name: "halt",
  scope: "cell",
  decide(cell, decided) {
    const plan = cell.rollout;
    if (decided.kind !== "want" || plan?.halted !== true || !rolled(cell, decided.proposal)) {
      return decided;
    }
    return setBack(cell, plan.record.build);
  },
};

function setBack(cell: Cell, build: string): Decision {
  const { node, module } = cell;
  const record = cell.rollout?.record;
  const what = record?.status === "aborted" ? "was aborted" : "halted";
  const why = `the rollout of ${module} build ${build} ${what} (${record?.failed?.reason ?? "failed"})`;
  const retry = `once fixed: \`mesh rollout retry ${module}\`, or a new build`;
  const back = fallbackOf(cell, build);
  const usable = back === undefined ? undefined : cell.index?.usable.get(back);
  if (usable === undefined) {
    const reason = `${why}; ${node} ran no other build of ${module} healthy, so nothing is wanted there; ${retry}`;
    return { kind: "none", unwanted: { rule: "halt", reason } };
  }
  // A node the rollout never reached keeps what it ran; only one that was given the build goes back.
  const given =
    cell.previous?.build === build ||
    (cell.snapshot.have.get(cell.key)?.history ?? []).some((h) => h.build === build);
  const where = given ? "is set back to" : "was never given it and keeps";
  const reason = `${why}; ${node} ${where} build ${usable.build.build}; ${retry}`;
  return { kind: "want", proposal: { usable, rule: "halt", reason } };
}
