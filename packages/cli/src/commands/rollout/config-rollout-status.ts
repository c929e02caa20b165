/**
 * The config rollouts in `mesh rollout status`, `mesh status` and the MCP door (decision 0131):
 * each value's status and wave, the nodes that run it healthy, failing, given it and not yet
 * healthy, and not reached, read from the assigner's record and the nodes' reports.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { Bucket, type ConfigRollout } from "@mesh/protocol";

/** One config rollout as an operator reads it. */
export interface ConfigRolloutRow {
  readonly module: string;
  readonly key: string;
  readonly value: ConfigRollout["value"];
  readonly status: ConfigRollout["status"];
  readonly wave: number;
  readonly waves: number;
  /** Nodes that report the module. */
  readonly nodes: number;
  /** Its module sees the value and is healthy. */
  readonly healthy: number;
  /** Given the value, not healthy on it yet. */
  readonly starting: number;
  readonly failing: number;
  /** Not given it. */
  readonly waiting: number;
  readonly waitsFor: string;
  readonly since: string;
  readonly failed: ConfigRollout["failed"];
}

/** Every config rollout (or one module's), with the nodes' reports counted. */
export async function readConfigRollouts(bus: MeshBus, only?: string): Promise<ConfigRolloutRow[]> {
  const waves = await KvBucket.open(bus, Bucket.configWaves);
  const have = await KvBucket.open(bus, Bucket.have);
  const keys = (await waves.keys(only === undefined ? ">" : `${only}.*`)).sort();
  const rows: ConfigRolloutRow[] = [];
  for (const k of keys) {
    const r = (await waves.get(k))?.value;
    if (r === undefined) continue;
    const counts = { healthy: 0, starting: 0, failing: 0, waiting: 0 };
    const admitted = new Set(r.admitted);
    const nodes = new Set(r.admitted);
    for (const key of await have.keys(`*.${r.module}`)) nodes.add(key.split(".")[0] as string);
    for (const node of nodes) {
      const report = (await have.get(`${node}.${r.module}`))?.value;
      const sees = report?.config?.values[r.key] === r.fingerprint;
      if (sees && report.health === "healthy") counts.healthy += 1;
      else if (sees && report.health === "failing") counts.failing += 1;
      else if (admitted.has(node) && r.status !== "failed" && r.status !== "aborted")
        counts.starting += 1;
      else counts.waiting += 1;
    }
    rows.push({
      module: r.module,
      key: r.key,
      value: r.value,
      status: r.status,
      wave: r.wave,
      waves: r.waves,
      nodes: nodes.size,
      ...counts,
      waitsFor: r.waiting,
      since: r.waveAt,
      failed: r.failed,
    });
  }
  return rows;
}

/** A row in a line or two, for `mesh rollout status` and `mesh status`. */
export function configRolloutLines(row: ConfigRolloutRow): string[] {
  const head =
    `${row.module} config ${row.key}=${JSON.stringify(row.value)}: ${row.status}, ` +
    `wave ${row.wave} of ${row.waves}; ${row.healthy} healthy on it, ${row.starting} starting, ` +
    `${row.failing} failing, ${row.waiting} waiting of ${row.nodes}`;
  return [head, `  waits for: ${row.waitsFor} (since ${row.since})`];
}
