/**
 * Which heartbeats wake the assigner (decision 0130): a rollout's gates read the time on a node
 * from its heartbeat, so the heartbeat of a node admitted to a rollout still under way is news;
 * any other only moves a time no rule reads. And the order a pass's writes go in.
 */
import type { AssignerWrite } from "@mesh/core";
import { Bucket, type Rollout } from "@mesh/protocol";

/** The nodes admitted to a rollout (of a build or a config value) still rolling or paused. */
export function gatedNodes(rollouts: Iterable<Pick<Rollout, "status" | "admitted">>): Set<string> {
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

/** When a pass writes a write (decision 0131): records, then mesh-wide config values, then the rest. */
export function writePhase(w: AssignerWrite): number {
  if (w.bucket === Bucket.rollouts || w.bucket === Bucket.configWaves) return 0;
  // A mesh-wide key has no node part: `<module>.<key>`.
  if (w.bucket === Bucket.config && w.value !== undefined && w.key.split(".").length === 2)
    return 1;
  return 2;
}
