/**
 * The config rollouts in `mesh rollout status`, `mesh status` and the MCP door (decision 0131):
 * each value's status and wave, the nodes that run it healthy, failing, given it and not yet
 * healthy, and not reached, read from the assigner's record and the nodes' reports.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { Bucket, type ConfigRollout } from "@mesh/protocol";
import { countNodes, waveLines, waveRowOf, type WaveRow } from "./wave-row.js";

/** One config rollout as an operator reads it. */
export interface ConfigRolloutRow extends WaveRow {
  readonly module: string;
  readonly key: string;
  readonly value: ConfigRollout["value"];
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
    const admitted = new Set(r.admitted);
    const counted = await countNodes(r.admitted, await have.keys(`*.${r.module}`), async (node) => {
      const report = (await have.get(`${node}.${r.module}`))?.value;
      const sees = report?.config?.values[r.key] === r.fingerprint;
      if (sees && report.health === "healthy") return "healthy";
      if (sees && report.health === "failing") return "failing";
      return admitted.has(node) && r.status !== "failed" && r.status !== "aborted"
        ? "starting"
        : "waiting";
    });
    rows.push({
      module: r.module,
      key: r.key,
      value: r.value,
      ...waveRowOf(r, counted),
    });
  }
  return rows;
}

/** A row in a line or two, for `mesh rollout status` and `mesh status`. */
export function configRolloutLines(row: ConfigRolloutRow): string[] {
  return waveLines(row, `${row.module} config ${row.key}=${JSON.stringify(row.value)}`, {
    healthyOnIt: true,
  });
}
