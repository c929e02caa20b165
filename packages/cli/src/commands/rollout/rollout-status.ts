/**
 * `mesh rollout status [<module>]` and the rollouts section of `mesh status` (issue 22): each
 * rollout's build, wave, the nodes done (healthy on it), starting, failing and waiting, what it
 * waits for and since when, read from the assigner's record and the nodes' reports.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { canaryOf } from "@mesh/core";
import { Bucket, checkName, type Presence, type Rollout } from "@mesh/protocol";
import type { ExitCode } from "../../output.js";
import { answer, connect, type MeshOptions } from "../../verb.js";
import { configRolloutLines, readConfigRollouts } from "./config-rollout-status.js";
import { countNodes, waveLines, waveRowOf, type WaveRow } from "./wave-row.js";

/** One rollout as an operator reads it. */
export interface RolloutRow extends WaveRow {
  readonly module: string;
  readonly build: string;
  readonly attempt: number;
  /** The canary's health: the first canary node (core's canaryOf), as its host reports the build. */
  readonly canary: { readonly node: string; readonly health: string } | undefined;
  readonly failed: Rollout["failed"];
}

/** Every module's rollout (or one), with the nodes' reports counted. */
export async function readRollouts(bus: MeshBus, only?: string): Promise<RolloutRow[]> {
  const rollouts = await KvBucket.open(bus, Bucket.rollouts);
  const wants = await KvBucket.open(bus, Bucket.wants);
  const have = await KvBucket.open(bus, Bucket.have);
  const modules = only === undefined ? (await rollouts.keys()).sort() : [only];
  const rows: RolloutRow[] = [];
  for (const module of modules) {
    const r = (await rollouts.get(module))?.value;
    if (r === undefined) continue;
    const reached = new Set(r.admitted);
    let canary: RolloutRow["canary"];
    const first = canaryOf(r, await factsFor(bus, r))[0];
    const counted = await countNodes(r.admitted, await wants.keys(`*.${module}`), async (node) => {
      const want = (await wants.get(`${node}.${module}`))?.value;
      const report = (await have.get(`${node}.${module}`))?.value;
      const mine = report?.build === r.build;
      if (node === first) {
        canary = { node, health: mine ? report.health : "not running it" };
      }
      if (mine && report.health === "healthy") return "healthy";
      if (mine && report.health === "failing") return "failing";
      if (want?.build === r.build) return "starting";
      return !reached.has(node) || r.status === "failed" || r.status === "aborted"
        ? "waiting"
        : "starting";
    });
    rows.push({
      module,
      build: r.build,
      attempt: r.attempt,
      canary,
      ...waveRowOf(r, counted),
    });
  }
  return rows;
}

/** The presence of the admitted nodes when the rollout orders them by a fact, else none. */
async function factsFor(bus: MeshBus, r: Rollout): Promise<Map<string, Presence>> {
  const out = new Map<string, Presence>();
  if (r.wave < 2 || !r.policy.order.startsWith("label=")) return out;
  const presence = await KvBucket.open(bus, Bucket.presence);
  for (const node of r.admitted) {
    const value = (await presence.get(node))?.value;
    if (value !== undefined) out.set(node, value);
  }
  return out;
}

/** A row in a line or two, for `mesh rollout status` and `mesh status`. */
export function rolloutLines(row: RolloutRow): string[] {
  const attempt = row.attempt > 1 ? ` (attempt ${row.attempt})` : "";
  return waveLines(row, `${row.module} build ${row.build}${attempt}`, {
    more: row.canary === undefined ? "" : `; canary ${row.canary.node} ${row.canary.health}`,
  });
}

export async function rolloutStatus(
  module: string | undefined,
  options: MeshOptions,
): Promise<ExitCode> {
  if (module !== undefined) checkName("module", module);
  await using bus = await connect(options);
  const rows = await readRollouts(bus, module);
  const configRollouts = await readConfigRollouts(bus, module);
  return answer(options, { rollouts: rows, configRollouts }, () =>
    rows.length + configRollouts.length === 0
      ? [module === undefined ? "no rollout yet" : `${module} has no rollout yet`]
      : [...rows.flatMap(rolloutLines), ...configRollouts.flatMap(configRolloutLines)],
  );
}
