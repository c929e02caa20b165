/**
 * The console's read routes: a module's logs (pages and a live tail) and what a cell and a module
 * did over time (have's and wants' kept revisions, the conditions about them, when each node
 * took each build). Each reads the bus on demand for the one module it is asked about, so what
 * it costs follows the module, not the fleet.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  Bucket,
  ErrorCode,
  MeshError,
  isName,
  nodeModuleKey,
  type Condition,
  type Have,
  type Presence,
  type Rollout,
} from "@mesh/protocol";
import { KvBucket, type MeshBus } from "@mesh/bus";
import { AssignerConditionKind, canaryOf, cellConditionName } from "@mesh/core";
import {
  LOG_LINE_EVENT,
  Source,
  HEALTH_MAX_POINTS,
  TIMELINE_MAX_NODES,
  type CellHistory,
  type HealthPoint,
  type ModuleTimeline,
  type Revision,
  type RolloutCanaries,
} from "./browser/wire.js";
import { MAX_LOG_PAGE, readLogPage, tailLogs } from "./log-pages.js";
import type { MeshState } from "./mesh-state.js";
import { MAX_TOOL_STATS_MINUTES, readToolStats } from "./tool-stats-series.js";
import { SECURITY_HEADERS, sendEvent, sendJson } from "./respond.js";

export interface ConsoleContext {
  readonly bus: MeshBus;
  readonly state: MeshState;
  /** Every open event stream, so closing the view can end them. */
  readonly streams: Set<ServerResponse>;
  readonly signal: AbortSignal;
  readonly onProblem?: (what: string, error: unknown) => void;
}

/** The module (required) and node (optional) a query names, checked against the name rules. */
function cellOf(url: URL, needNode: boolean): { module: string; node: string | undefined } {
  const module = url.searchParams.get("module") ?? "";
  const node = url.searchParams.get("node") ?? undefined;
  if (!isName("module", module)) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `module=${JSON.stringify(module)} is not a module's name; give ?module=<name>`,
    );
  }
  if ((needNode || node !== undefined) && (node === undefined || !isName("node", node))) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `node=${JSON.stringify(node ?? "")} is not a node's name; give &node=<name>`,
    );
  }
  return { module, node };
}

function whole(url: URL, name: string, fallback: number | undefined): number | undefined {
  const text = url.searchParams.get(name);
  if (text === null || text === "") return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `${name}=${JSON.stringify(text)} is not a whole number`,
    );
  }
  return n;
}

/** `GET /api/logs?module=&node=&before=&count=`: a page of a module's lines (LogPage). */
export async function logs(c: ConsoleContext, res: ServerResponse, url: URL): Promise<void> {
  const { module, node } = cellOf(url, false);
  const before = whole(url, "before", undefined);
  const count = Math.min(whole(url, "count", 200) ?? 200, MAX_LOG_PAGE);
  const page = await readLogPage(
    c.bus,
    {
      module,
      count,
      ...(node === undefined ? {} : { node }),
      ...(before === undefined ? {} : { before }),
    },
    c.signal,
  );
  sendJson(res, 200, page);
}

/** `GET /api/log-tail?module=&node=&after=`: each new line as an event, until the page leaves. */
export function logTail(
  c: ConsoleContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): void {
  const { module, node } = cellOf(url, false);
  const after = whole(url, "after", 0) ?? 0;
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    connection: "keep-alive",
  });
  res.write(": the log tail\n\n");
  const stop = new AbortController();
  const onViewStop = (): void => stop.abort();
  c.signal.addEventListener("abort", onViewStop, { once: true });
  c.streams.add(res);
  const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 25_000);
  const end = (): void => {
    clearInterval(keepAlive);
    c.signal.removeEventListener("abort", onViewStop);
    c.streams.delete(res);
    stop.abort();
  };
  req.on("close", end);
  res.on("close", end);
  tailLogs(c.bus, { module, after, ...(node === undefined ? {} : { node }) }, stop.signal, (line) =>
    sendEvent(res, LOG_LINE_EVENT, line),
  ).catch((error: unknown) => {
    if (!stop.signal.aborted) c.onProblem?.(`following the logs of ${module}`, error);
    res.end();
  });
}

/**
 * `GET /api/tool-stats?module=&node=&minutes=`: a module's tool calls and errors over the last
 * minutes (default 30, at most a day), on one node or every node (ToolStatsSeries).
 */
export async function toolStats(c: ConsoleContext, res: ServerResponse, url: URL): Promise<void> {
  const { module, node } = cellOf(url, false);
  const minutes = whole(url, "minutes", 30) ?? 30;
  if (minutes < 1 || minutes > MAX_TOOL_STATS_MINUTES) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `minutes=${minutes} is outside 1–${MAX_TOOL_STATS_MINUTES}; the stream keeps a day of counts, ask for less`,
    );
  }
  const query = { module, minutes, now: Date.now(), ...(node === undefined ? {} : { node }) };
  sendJson(res, 200, await readToolStats(c.bus, query, c.signal));
}

const revisions = <T>(
  entries: ReadonlyArray<{ revision: number; value: T | undefined; at: Date }>,
): Array<Revision<T>> =>
  entries.map((e) => ({
    revision: e.revision,
    at: e.at.toISOString(),
    ...(e.value === undefined ? {} : { value: e.value }),
  }));

/** `GET /api/history?module=&node=`: one cell over time (CellHistory). */
export async function history(c: ConsoleContext, res: ServerResponse, url: URL): Promise<void> {
  const { module, node = "" } = cellOf(url, true);
  const key = nodeModuleKey(node, module);
  const signal = c.signal;
  const [have, wants] = await Promise.all([
    KvBucket.open(c.bus, Bucket.have).then((b) => b.history(key, { signal })),
    KvBucket.open(c.bus, Bucket.wants).then((b) => b.history(key, { signal })),
  ]);
  const assigners = new Set(
    [AssignerConditionKind.setBack, AssignerConditionKind.failing].map((kind) =>
      cellConditionName(kind, node, module),
    ),
  );
  const conditions = [...c.state.entries(Source.conditions).values()]
    .map((v) => v as Condition)
    .filter(
      (k) =>
        (k.module === module && (k.node === undefined || k.node === node)) ||
        (k.node === node && assigners.has(k.name)),
    )
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    .map((k) => ({
      name: `${k.module}.${k.name}`,
      level: k.level,
      message: k.message,
      at: k.at,
      resolved: k.resolved === true,
    }));
  const body: CellHistory = {
    node,
    module,
    have: revisions(have),
    wants: revisions(wants),
    conditions,
  };
  sendJson(res, 200, body);
}

/**
 * `GET /api/timeline?module=`: when each node took each build (ModuleTimeline), from have's
 * kept revisions: a build counts from the first revision that reports it.
 */
export async function timeline(c: ConsoleContext, res: ServerResponse, url: URL): Promise<void> {
  const { module } = cellOf(url, false);
  const have = await KvBucket.open(c.bus, Bucket.have);
  const entries = await have.history(`*.${module}`, { signal: c.signal });
  const byNode = new Map<string, Array<{ build: string; at: string }>>();
  for (const entry of entries) {
    const node = entry.key.slice(0, entry.key.length - module.length - 1);
    const build = entry.value?.build;
    if (build === undefined) continue;
    const builds = byNode.get(node) ?? [];
    if (builds.at(-1)?.build !== build) builds.push({ build, at: entry.at.toISOString() });
    byNode.set(node, builds);
  }
  const nodes = [...byNode]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, builds]) => ({ node, builds }));
  const body: ModuleTimeline = {
    module,
    nodes: nodes.slice(0, TIMELINE_MAX_NODES),
    leftOut: Math.max(0, nodes.length - TIMELINE_MAX_NODES),
    health: healthSeries(entries, module),
  };
  sendJson(res, 200, body);
}

/**
 * `GET /api/rollout-canaries`: every rollout's canary and how it runs the build rolled out
 * (RolloutCanaries), from what the view already mirrors: a few map lookups per rollout.
 */
export function rolloutCanaries(c: ConsoleContext, res: ServerResponse): void {
  const presence = c.state.entries(Source.presence) as ReadonlyMap<string, Presence>;
  const body: RolloutCanaries = {};
  for (const [module, value] of c.state.entries(Source.rollouts)) {
    const r = value as Rollout;
    body[module] = canaryOf(r, presence).map((node) => {
      const have = c.state.get(Source.have, nodeModuleKey(node, module)) as Have | undefined;
      return { node, health: have?.build === r.build ? have.health : "not running it" };
    });
  }
  sendJson(res, 200, body);
}

/**
 * The module's nodes by health after each kept revision, in the order they were written: each
 * node counts in the health its last revision says (a delete takes it out).
 */
export function healthSeries(
  entries: ReadonlyArray<{ key: string; at: Date; value: Have | undefined }>,
  module: string,
): HealthPoint[] {
  const current = new Map<string, Have["health"]>();
  const points: HealthPoint[] = [];
  for (const entry of [...entries].sort((a, b) => a.at.getTime() - b.at.getTime())) {
    const node = entry.key.slice(0, entry.key.length - module.length - 1);
    if (entry.value === undefined) current.delete(node);
    else current.set(node, entry.value.health);
    const counts = { healthy: 0, starting: 0, failing: 0, stopped: 0 };
    for (const health of current.values()) counts[health] += 1;
    points.push({ at: entry.at.toISOString(), ...counts });
  }
  if (points.length <= HEALTH_MAX_POINTS) return points;
  const step = points.length / HEALTH_MAX_POINTS;
  const thinned = Array.from(
    { length: HEALTH_MAX_POINTS - 1 },
    (_, i) => points[Math.floor(i * step)],
  );
  return [...thinned.filter((p): p is HealthPoint => p !== undefined), ...points.slice(-1)];
}
