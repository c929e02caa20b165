/**
 * Which heartbeats wake the assigner (decision 0130): a rollout's gates read the time on a node
 * from its heartbeat, so the heartbeat of a node admitted to a rollout still under way is news;
 * any other only moves a time no rule reads.
 */
import type { Rollout } from "@mesh/protocol";

/** The nodes admitted to a rollout still rolling or paused. */
export function gatedNodes(rollouts: Iterable<Rollout>): Set<string> {
  const out = new Set<string>();
  for (const r of rollouts) {
    if (r.status === "rolling" || r.status === "paused") for (const n of r.admitted) out.add(n);
  }
  return out;
}

/** The node a presence value is of. */
export function nodeOf(value: unknown): string {
  return typeof value === "object" && value !== null && "node" in value ? String(value.node) : "";
}
