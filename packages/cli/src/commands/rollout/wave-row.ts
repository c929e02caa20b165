/**
 * What `mesh rollout status` says of a rollout's waves, a build's and a config value's alike:
 * its status and wave, the nodes healthy on it, starting, failing and waiting, what it waits for
 * and since when, read from the assigner's record.
 */
import type { ConfigRollout, Rollout } from "@mesh/protocol";

/** How many of a rollout's nodes are where. */
export interface WaveCounts {
  /** Running it healthy. */
  healthy: number;
  /** Given it, not healthy on it yet. */
  starting: number;
  failing: number;
  /** Not given it yet. */
  waiting: number;
}

/** The waves of one rollout as an operator reads them. */
export interface WaveRow extends Readonly<WaveCounts> {
  readonly status: Rollout["status"];
  readonly wave: number;
  readonly waves: number;
  /** Nodes the rollout reaches (of a config value's: that report the module). */
  readonly nodes: number;
  readonly waitsFor: string;
  readonly since: string;
}

/**
 * A rollout's nodes, those it admitted and those `keys` (`<node>.<module>`) name, each counted
 * where `place` puts it (asked in the nodes' order).
 */
export async function countNodes(
  admitted: readonly string[],
  keys: readonly string[],
  place: (node: string) => Promise<keyof WaveCounts>,
): Promise<{ nodes: number; counts: WaveCounts }> {
  const nodes = new Set(admitted);
  for (const key of keys) nodes.add(key.split(".")[0] as string);
  const counts: WaveCounts = { healthy: 0, starting: 0, failing: 0, waiting: 0 };
  for (const node of [...nodes].sort()) counts[await place(node)] += 1;
  return { nodes: nodes.size, counts };
}

/** The row's wave fields, from the assigner's record and the counts of its nodes. */
export function waveRowOf<R extends Rollout | ConfigRollout>(
  r: R,
  { nodes, counts }: { nodes: number; counts: WaveCounts },
): WaveRow & { readonly failed: R["failed"] } {
  return {
    status: r.status,
    wave: r.wave,
    waves: r.waves,
    nodes,
    ...counts,
    waitsFor: r.waiting,
    since: r.waveAt,
    failed: r.failed,
  };
}

/** A row in a line or two, for `mesh rollout status` and `mesh status`: `what` names it. */
export function waveLines(
  row: WaveRow,
  what: string,
  options: { healthyOnIt?: boolean; more?: string } = {},
): string[] {
  const head =
    `${what}: ${row.status}, wave ${row.wave} of ${row.waves}; ` +
    `${row.healthy} healthy${options.healthyOnIt === true ? " on it" : ""}, ` +
    `${row.starting} starting, ${row.failing} failing, ${row.waiting} waiting of ${row.nodes}` +
    (options.more ?? "");
  return [head, `  waits for: ${row.waitsFor} (since ${row.since})`];
}
