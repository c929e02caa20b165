/**
 * A module's rollout policy resolved for one rollout (issue 22): the operator's override over the
 * build's manifest over the mesh's default, field by field, with counts turned into nodes of the
 * rollout and durations into milliseconds; and the order the nodes are reached in.
 */
import { createHash } from "node:crypto";
import {
  durationMs,
  type Presence,
  type ResolvedRolloutPolicy,
  type RolloutCount,
  type RolloutPolicy,
} from "@mesh/protocol";

/**
 * The mesh's default, safe for a fleet: one canary, then a quarter of the nodes at a time, each
 * wave proven by 30 s of health. On one node the canary is the whole fleet, so a single machine
 * gets a new build at once, as before waves.
 */
export const DEFAULT_ROLLOUT = {
  canary: 1,
  batch: "25%",
  "min-healthy": "30s",
  "healthy-deadline": "5m",
  "max-failing": 0,
  "pause-after-canary": false,
  order: "name",
} as const satisfies Required<RolloutPolicy>;

export interface PolicyInput {
  /** The operator's override (`mesh rollout set`). */
  readonly override?: RolloutPolicy | undefined;
  /** The `rollout:` of the build's manifest. */
  readonly manifest?: RolloutPolicy | undefined;
  /** How many nodes the rollout reaches: percentages are of these. */
  readonly nodes: number;
}

export function resolveRolloutPolicy(input: PolicyInput): ResolvedRolloutPolicy {
  const { override, manifest, nodes } = input;
  const merged: RolloutPolicy = { ...DEFAULT_ROLLOUT, ...manifest, ...override };
  const batchText = merged.batch ?? DEFAULT_ROLLOUT.batch;
  // `--batch 100%` alone is today's all-at-once: no canary unless one is written.
  const written = override?.canary ?? manifest?.canary;
  const canary = written ?? (batchText === "100%" ? 0 : DEFAULT_ROLLOUT.canary);
  return {
    canary: countOf(canary, nodes),
    batch: Math.max(1, countOf(batchText, nodes)),
    minHealthyMs: durationMs(merged["min-healthy"] ?? DEFAULT_ROLLOUT["min-healthy"]),
    healthyDeadlineMs: Math.max(
      1,
      durationMs(merged["healthy-deadline"] ?? DEFAULT_ROLLOUT["healthy-deadline"]),
    ),
    maxFailing: countOf(merged["max-failing"] ?? 0, nodes, "floor"),
    pauseAfterCanary: merged["pause-after-canary"] ?? false,
    order: merged.order ?? "name",
    source: override !== undefined ? "operator" : manifest !== undefined ? "manifest" : "default",
  };
}

/** A count in nodes of `nodes`: a percentage rounds up (a batch of 25% of 3 is 1), a tolerance down. */
export function countOf(
  count: RolloutCount,
  nodes: number,
  round: "ceil" | "floor" = "ceil",
): number {
  if (typeof count === "number") return Math.min(count, nodes);
  const share = (Number(count.slice(0, -1)) * nodes) / 100;
  return round === "ceil" ? Math.ceil(share) : Math.floor(share);
}

/**
 * The nodes in the order a rollout reaches them: by name; `random`, shuffled by the build (the
 * same build always gives the same order, so a rerun or a restart reaches the same nodes); or
 * `label=<fact>`, by that fact of the node's presence, then by name.
 */
export function orderNodes(
  nodes: readonly string[],
  order: string,
  build: string,
  presence: ReadonlyMap<string, Presence>,
): string[] {
  const byName = [...nodes].sort();
  if (order === "random") {
    const key = (n: string): string => createHash("sha256").update(`${build}\n${n}`).digest("hex");
    return byName
      .map((n) => [key(n), n] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, n]) => n);
  }
  if (order.startsWith("label=")) {
    const fact = order.slice("label=".length);
    const valueOf = (n: string): string => {
      const facts = presence.get(n)?.facts as Record<string, unknown> | undefined;
      const v = facts?.[fact];
      // A node without the fact comes last.
      return typeof v === "string" || typeof v === "boolean" ? String(v) : "\uffff";
    };
    return byName
      .map((n) => [valueOf(n), n] as const)
      .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
      .map(([, n]) => n);
  }
  return byName;
}

/** A duration in words for reasons: `30s`, `5m`, `1500ms`. */
export function durationText(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}
