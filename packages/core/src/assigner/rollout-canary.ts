/**
 * A rollout's canary as its record tells it, for what an operator reads (`mesh rollout status`,
 * the view's rollouts panel): the nodes of wave 1 while it is the last given; later, the first
 * `policy.canary` of the nodes admitted, in the rollout's order (the order the plan gave the
 * waves in; a node admitted at once because it had nothing to keep is counted among them only
 * when that order puts it first).
 */
import type { Presence, Rollout } from "@mesh/protocol";
import { orderNodes } from "./rollout-policy.js";

export function canaryOf(
  r: Pick<Rollout, "build" | "wave" | "admitted" | "waveNodes" | "policy">,
  presence: ReadonlyMap<string, Presence> = new Map(),
): string[] {
  if (r.policy.canary === 0 || r.wave === 0) return [];
  if (r.wave === 1) return [...r.waveNodes];
  return orderNodes(r.admitted, r.policy.order, r.build, presence).slice(0, r.policy.canary);
}
