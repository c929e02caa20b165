/**
 * Rule 7, waves: a new build reaches the nodes in waves (decision 0130). The canary first, then
 * a batch at a time, each only once every node of the wave before ran it healthy for
 * `min-healthy`; a node not reached yet keeps the build it runs, and its reason says its wave and
 * what that wave waits for. Which nodes are reached is the module's rollout plan, decided once a
 * pass over the whole fleet (../rollout-plan.ts).
 */
import { durationText } from "../rollout-policy.js";
import { keptBuild, rolled } from "./rolled.js";
import type { CellRule } from "./rule.js";

export const waves: CellRule<"waves"> = {
  name: "waves",
  scope: "cell",
  decide(cell, decided) {
    const plan = cell.rollout;
    if (decided.kind !== "want" || plan === undefined || plan.halted) return decided;
    if (!rolled(cell, decided.proposal) || plan.allowed.has(cell.node)) return decided;
    const { record } = plan;
    const keep = keptBuild(cell, record.build);
    const usable = keep === undefined ? undefined : cell.index?.usable.get(keep);
    // A node with nothing of its own to keep is admitted by the plan; this is only a guard.
    if (usable === undefined) return decided;
    const wave = plan.waveOf.get(cell.node) ?? record.wave + 1;
    const reason =
      `${cell.module} build ${record.build} reaches the fleet in waves: ${cell.node} is in wave ` +
      `${wave} of ${record.waves}, given once the waves before it ran it healthy for ` +
      `${durationText(record.policy.minHealthyMs)}; build ${usable.build.build} stands ` +
      `(\`mesh rollout status ${cell.module}\`)`;
    return { kind: "want", proposal: { usable, rule: "waves", reason } };
  },
};
