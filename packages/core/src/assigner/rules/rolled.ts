/** What the rollout rules share: which proposals a rollout governs, and a node's way back. */
import { putOf, type Cell, type Proposal } from "../model.js";

/**
 * A proposal a rollout governs: the newest build, or a put to every node. A put on one node is
 * the operator's choice for that node and is never held back nor set back by a rollout.
 */
export function rolled(cell: Cell, proposal: Proposal): boolean {
  const plan = cell.rollout;
  if (plan === undefined || proposal.usable.build.build !== plan.record.build) return false;
  return (
    proposal.rule === "newest" || (proposal.rule === "put" && putOf(cell)?.where === "all nodes")
  );
}

/** The build a node keeps while a rollout has not reached it: its previous want, when it can. */
export function keptBuild(cell: Cell, not: string): string | undefined {
  const build = cell.previous?.build;
  if (build === undefined || build === not || cell.marks.has(build)) return undefined;
  return cell.index?.usable.has(build) === true ? build : undefined;
}

/**
 * Where a halted rollout sets a node back: the build it last ran healthy; else the build it ran
 * last that never failed there (one still starting when the new build came, which would have
 * been healthy but for the rollout: nothing wanted would stop a build that works); else its
 * previous want.
 */
export function fallbackOf(cell: Cell, not: string): string | undefined {
  const history = cell.snapshot.have.get(cell.key)?.history ?? [];
  const usable = (build: string | undefined): build is string =>
    build !== undefined &&
    build !== not &&
    !cell.marks.has(build) &&
    cell.index?.usable.has(build) === true;
  for (const healthy of [true, false]) {
    for (let i = history.length - 1; i >= 0; i--) {
      const h = history[i];
      if ((healthy && h?.health !== "healthy") || !usable(h?.build)) continue;
      return h?.build;
    }
  }
  return keptBuild(cell, not);
}
