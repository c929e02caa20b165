/**
 * Rule 5, set-back: the newest build marked failing on a node (decision 0034) is not wanted
 * there while another build ran healthy there: the node goes back to the build it last ran
 * healthy, and a condition says so. With no such build the newest stays wanted, failing: the host
 * restarts it with backoff, and a healthy run, a new build or `mesh retry` lifts the mark.
 * A put is the operator's choice and is never set back.
 */
import type { Cell, Decision, Proposal } from "../model.js";
import type { CellRule } from "./rule.js";

export const setBack: CellRule<"set-back"> = {
  name: "set-back",
  scope: "cell",
  decide(cell, decided) {
    if (decided.kind !== "want" || decided.proposal.rule !== "newest") return decided;
    const failing = decided.proposal.usable.build.build;
    if (!cell.marks.has(failing)) return decided;
    return backTo(cell, failing) ?? keepFailing(cell, decided.proposal);
  },
};

/** The build the node last ran healthy, not marked and still usable. */
function backTo(cell: Cell, failing: string): Decision | undefined {
  const history = cell.snapshot.have.get(cell.key)?.history ?? [];
  for (let i = history.length - 1; i >= 0; i--) {
    const h = history[i];
    if (h?.health !== "healthy" || h.build === undefined || cell.marks.has(h.build)) continue;
    const usable = cell.index?.usable.get(h.build);
    if (usable === undefined) continue;
    return {
      kind: "want",
      proposal: {
        usable,
        rule: "set-back",
        reason: `${cell.node} reported ${cell.module} build ${failing} failing, so it is set back to build ${h.build}, the build it last ran healthy`,
      },
    };
  }
  return undefined;
}

function keepFailing(cell: Cell, proposal: Proposal): Decision {
  const { node, module } = cell;
  const build = proposal.usable.build.build;
  return {
    kind: "want",
    proposal: {
      ...proposal,
      reason:
        `${proposal.reason}; ${node} reported it failing and ran no other stored build healthy, ` +
        `so it stays wanted and the host restarts it with backoff; once the cause is fixed: ` +
        `\`mesh retry ${module} --node ${node}\`, or a new build (\`mesh builds ${module}\` shows ${build})`,
    },
  };
}
