/**
 * `mesh status`: the mesh at a glance, the same facts the view shows — nodes (present or gone,
 * since when), modules × nodes with want, have and health, differences with their reasons, open
 * asks, and the latest conditions. One read of each bucket and of the conditions stream; it does
 * not follow changes (the view does). Present or gone, and each assigned cell's state, reason and
 * fix, come from core's read model of the fleet (`readFleet`), which the view uses too.
 */
import { setMaxListeners } from "node:events";
import type { Command } from "commander";
import { KvBucket, conditionsSource, readStanding, type MeshBus } from "@mesh/bus";
import { readFleet, type FleetState } from "@mesh/core";
import { isMeshError, type Condition } from "@mesh/protocol";
import {
  Bucket,
  ErrorCode,
  MeshError,
  PRESENCE_GONE_MS,
  Subject,
  parseNodeModuleKey,
} from "@mesh/protocol";
import { connectToMesh } from "../../find-mesh.js";
import { ExitCode, printJson } from "../../output.js";
import { printStatus } from "./status-print.js";
import { readRollouts, rolloutLines } from "../rollout/rollout-status.js";
import { configRolloutLines, readConfigRollouts } from "../rollout/config-rollout-status.js";
import { readAll } from "../../read-bucket.js";
import { readStatusByKey } from "./status-by-key.js";
import {
  RECENT_CONDITIONS,
  statusCell,
  type StatusCell,
  type StatusNode,
  type StatusReport,
} from "./status-report.js";
import { act, meshVerb, positiveNumber, wholeNumber, type MeshOptions } from "../../verb.js";
import {
  STATUS_LIMIT,
  attentionOf,
  narrowed,
  pageInfo,
  pageOf,
  summarize,
  type StatusQuery,
} from "./status-page.js";

export type { StatusCell, StatusNode, StatusReport, StatusSource } from "./status-report.js";

/** A heartbeat older than this counts as gone (protocol's one threshold, also the view's). */
export { PRESENCE_GONE_MS };

/**
 * How long status reads every bucket when the assigner has written no summary yet (an assigner
 * from before decision 0090, or a mesh just started): a small mesh answers well within it.
 */
export const EVERY_BUCKET_MS = 20_000;

/** Reads everything status shows. `now` decides who is gone; `query` pages and narrows the lists. */
export async function readStatus(
  bus: MeshBus,
  options: {
    readonly now: Date;
    readonly signal?: AbortSignal;
    readonly query?: Partial<StatusQuery>;
    /** Read every bucket up to this many cells (default STATUS_WHOLE_UP_TO). */
    readonly wholeUpTo?: number;
  },
): Promise<StatusReport> {
  const query: StatusQuery = { from: 0, limit: STATUS_LIMIT.json, ...options.query };
  const byKey = await readStatusByKey(bus, {
    now: options.now,
    query,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.wholeUpTo === undefined ? {} : { wholeUpTo: options.wholeUpTo }),
  });
  if (typeof byKey !== "string") return byKey;
  // Every bucket, read whole, for at most EVERY_BUCKET_MS.
  const limit = AbortSignal.timeout(EVERY_BUCKET_MS);
  const signal = options.signal === undefined ? limit : AbortSignal.any([options.signal, limit]);
  // Every bucket's read listens on it at once.
  setMaxListeners(0, signal);
  try {
    const { state, conditions } = await readFleetState(bus, { now: options.now, signal });
    return {
      ...statusOf(state, conditions, options.now, query),
      source: { kind: "every-bucket", why: byKey },
    };
  } catch (error) {
    if (!limit.aborted || options.signal?.aborted === true) throw error;
    throw new MeshError(
      ErrorCode.TIMEOUT,
      `${byKey}, and reading every bucket took over ${EVERY_BUCKET_MS / 1000} s; ` +
        "run an assigner from this release (`mesh up` starts one; `mesh logs assigner`), which keeps the summary status reads in one get",
      { cause: error },
    );
  }
}

/**
 * What status shows of a fleet's state: also what `mesh wants` and `mesh differences` say. The
 * lists are whole unless `query` pages or narrows them.
 */
export function statusOf(
  state: FleetState,
  conditions: Array<Condition & { subject: string }>,
  now: Date,
  query: StatusQuery = { from: 0, limit: Number.MAX_SAFE_INTEGER },
): StatusReport {
  const { presence, have: haves, wants, differences, asks, answers } = state;
  const fleet = readFleet(state);
  const reasons = new Map(fleet.cells.map((c) => [`${c.node}.${c.module}`, c]));
  const nodeStates = new Map(fleet.nodes.map((n) => [n.node, n.state]));

  const nodeNames = new Set(nodeStates.keys());
  const cells = new Map<string, { node: string; module: string }>();
  for (const keys of [reasons.keys(), wants.keys(), haves.keys()]) {
    for (const key of keys) {
      const parsed = safeNodeModule(key);
      if (parsed === undefined) continue;
      nodeNames.add(parsed.node);
      if (narrowed(query, parsed.node, parsed.module)) cells.set(key, parsed);
    }
  }
  const allNodes = [...nodeNames].filter((node) => narrowed(query, node)).sort();
  const nodes = pageOf(allNodes, query).map((node): StatusNode => {
    const p = presence.get(node);
    if (p === undefined) return { node, present: false, heartbeat: null, since: null, facts: null };
    const present = nodeStates.get(node) === "present";
    return { node, present, heartbeat: p.heartbeat, since: p.heartbeat, facts: p.facts };
  });

  const sortedCells = [...cells.entries()].sort(([, a], [, b]) => compareCell(a, b));
  const modules = pageOf(sortedCells, query).map(([key, { node, module }]): StatusCell =>
    statusCell(key, node, module, state, reasons),
  );
  const allDifferences = [...differences.entries()]
    .sort(([a], [b]) => cmp(a, b))
    .flatMap(([key, d]) => {
      const parsed = safeNodeModule(key);
      return parsed === undefined || !narrowed(query, parsed.node, parsed.module)
        ? []
        : [{ ...parsed, ...d }];
    });
  const attention = attentionOf(fleet, query);
  return {
    at: now.toISOString(),
    nodes,
    modules,
    differences: pageOf(allDifferences, query),
    asks: [...asks.values()].filter((a) => !answers.has(a.id)).sort((a, b) => cmp(a.at, b.at)),
    // A resolved condition's cause has ended: not news (`mesh conditions` still lists it).
    conditions: conditions.filter((c) => c.resolved !== true).slice(0, RECENT_CONDITIONS),
    attention: pageOf(attention, query),
    summary: summarize(fleet),
    source: { kind: "every-bucket", why: "every bucket read whole" },
    page: pageInfo(query, {
      nodes: allNodes.length,
      modules: sortedCells.length,
      differences: allDifferences.length,
      attention: attention.length,
    }),
  };
}

/** Every bucket the read model reads, and the conditions, as they stand. */
export async function readFleetState(
  bus: MeshBus,
  options: { readonly now: Date; readonly signal?: AbortSignal },
): Promise<{ state: FleetState; conditions: Array<Condition & { subject: string }> }> {
  const read = <B extends Bucket>(bucket: B) =>
    KvBucket.open(bus, bucket).then((b) => readAll(b, undefined, options.signal));
  // All at once: each read is a few round trips to the server, and a verb's start waits on them.
  const [
    presence,
    wants,
    have,
    differences,
    asks,
    answers,
    assignments,
    registrations,
    builds,
    compositions,
    conditions,
  ] = await Promise.all([
    read(Bucket.presence),
    read(Bucket.wants),
    read(Bucket.have),
    read(Bucket.differences),
    read(Bucket.asks),
    read(Bucket.answers),
    read(Bucket.assignments),
    read(Bucket.modules),
    read(Bucket.builds),
    read(Bucket.compositions),
    readConditions(bus, options.signal === undefined ? {} : { signal: options.signal }),
  ]);
  const now = options.now.getTime();
  const state: FleetState = {
    now,
    presence,
    assignments,
    registrations,
    builds,
    wants,
    have,
    differences,
    compositions,
    asks,
    answers,
    conditions,
  };
  return { state, conditions };
}

/** Every condition the stream keeps (the last per module and name), newest first. */
export async function readConditions(
  bus: MeshBus,
  options: { readonly module?: string; readonly signal?: AbortSignal } = {},
): Promise<Array<Condition & { subject: string }>> {
  const filter =
    options.module === undefined ? undefined : `${Subject.conditionsPrefix}.${options.module}.*`;
  const kept = await readStanding(conditionsSource(bus, filter === undefined ? {} : { filter }), {
    signal: options.signal,
  });
  return [...kept]
    .map(([key, c]) => ({ ...c, subject: `${Subject.conditionsPrefix}.${key}` }))
    .sort((a, b) => cmp(b.at, a.at));
}

export function registerStatusVerb(program: Command): void {
  act(
    pagingOptions(
      meshVerb(
        program,
        "status",
        "The mesh at a glance: a summary, nodes, modules × nodes (want, have, health), differences, open asks, recent conditions; long lists come in pages.",
      ),
    ),
    statusVerb,
  );
}

/** The narrowing and paging options of status, also `mesh wants`' and `mesh differences'`. */
export function pagingOptions(command: Command, rows = "rows"): Command {
  return command
    .option("--node <name>", `only this node's ${rows}`)
    .option("--module <name>", `only this module's ${rows}`)
    .option("--from <n>", "the first row of each list to show (0-based)", wholeNumber("--from"))
    .option(
      "--limit <n>",
      `the most rows of each list (default ${STATUS_LIMIT.text}, with --json ${STATUS_LIMIT.json})`,
      positiveNumber("--limit", "200", 100_000),
    );
}

/** The query the paging options ask for. */
export function statusQuery(options: StatusOptions): StatusQuery {
  const json = options.json === true;
  return {
    from: options.from ?? 0,
    limit: options.limit ?? (json ? STATUS_LIMIT.json : STATUS_LIMIT.text),
    ...(options.node === undefined ? {} : { node: options.node }),
    ...(options.module === undefined ? {} : { module: options.module }),
  };
}

export interface StatusOptions extends MeshOptions {
  readonly node?: string;
  readonly module?: string;
  readonly from?: number;
  readonly limit?: number;
}

export async function statusVerb(options: StatusOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const json = options.json === true;
  const query = statusQuery(options);
  const report = await readStatus(bus, { now: new Date(), query });
  // Rollouts under way or halted (a done one is in `mesh rollout status`).
  const open = <R extends { status: string }>(rows: R[]) => rows.filter((r) => r.status !== "done");
  const rollouts = open(await readRolloutsOpen(() => readRollouts(bus, options.module)));
  const configRollouts = open(
    await readRolloutsOpen(() => readConfigRollouts(bus, options.module)),
  );
  if (json) {
    printJson({ ok: true, ...report, rollouts, configRollouts });
    return ExitCode.ok;
  }
  printStatus(report, query);
  const lines = [...rollouts.flatMap(rolloutLines), ...configRollouts.flatMap(configRolloutLines)];
  if (lines.length > 0) process.stdout.write(`rollouts:\n${lines.map((l) => `  ${l}\n`).join("")}`);
  return ExitCode.ok;
}

/** Rollouts as `read` reads them; none when the bucket is not there yet. */
async function readRolloutsOpen<R>(read: () => Promise<R[]>): Promise<R[]> {
  try {
    return await read();
  } catch (error) {
    // A mesh from before rollouts, whose controller has not made the bucket yet.
    if (isMeshError(error, ErrorCode.BUCKET_UNAVAILABLE) || isMeshError(error, ErrorCode.NOT_FOUND))
      return [];
    throw error;
  }
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function compareCell(
  a: { node: string; module: string } | undefined,
  b: { node: string; module: string } | undefined,
): number {
  return cmp(
    `${a?.module ?? ""}\u0000${a?.node ?? ""}`,
    `${b?.module ?? ""}\u0000${b?.node ?? ""}`,
  );
}

/** A key the layout says is `<node>.<module>`; a malformed one is left out, not fatal. */
function safeNodeModule(key: string): { node: string; module: string } | undefined {
  try {
    return parseNodeModuleKey(key);
  } catch {
    return undefined;
  }
}
