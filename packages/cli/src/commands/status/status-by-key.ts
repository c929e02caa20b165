/**
 * `mesh status` from the assigner's summary and a page read by key (decision 0090): the header
 * and what needs attention from `mesh-summary.fleet` in one get; the node names as a list of
 * presence keys; then only the keys of the nodes and cells on the page, by direct gets. Its time
 * follows the page and the modules, not the fleet. Each cell's state, reason and fix is still
 * core's read model (`cellReason`), given its node's keys.
 *
 * With `--node`, every cell of that node is read, so its attention and differences are whole;
 * otherwise they are the summary's first ones (narrowed by `--module`), with the totals it counts.
 */
import {
  allNodesOf,
  cellReason,
  differencesIfWhole,
  fleetStateOf,
  nodeState,
  type CellReason,
} from "@mesh/core";
import {
  Bucket,
  conditionSubject,
  nodeModuleKey,
  type Difference,
  type NodeKeys,
  type Summary,
} from "@mesh/protocol";
import { KvBucket, readNodeKeys, type MeshBus } from "@mesh/bus";
import { readShape } from "@mesh/view";
import { narrowed, pageInfo, pageOf, type StatusQuery } from "./status-page.js";
import {
  RECENT_CONDITIONS,
  statusCell,
  type StatusNode,
  type StatusReport,
} from "./status-report.js";

type Cell = { readonly node: string; readonly module: string };

/**
 * A fleet of at most this many cells (assigned and leaving) is read whole: as quick, and exact to
 * the moment, where the summary may be a second behind.
 */
export const STATUS_WHOLE_UP_TO = 1_000;

/** Why status reads every bucket: the assigner wrote no summary yet. */
export const NO_SUMMARY =
  "the assigner has written no summary of the fleet yet (an assigner from before it, or a mesh just started)";

/**
 * The report from the summary and the page's keys; or, when there is no summary yet or the fleet
 * is small, why every bucket is to be read instead.
 */
export async function readStatusByKey(
  bus: MeshBus,
  options: {
    readonly now: Date;
    readonly query: StatusQuery;
    readonly signal?: AbortSignal;
    /** Read whole up to this many cells (default {@link STATUS_WHOLE_UP_TO}). */
    readonly wholeUpTo?: number;
  },
): Promise<StatusReport | string> {
  const { query, signal } = options;
  const shape = await readShape(bus, { above: options.wholeUpTo ?? STATUS_WHOLE_UP_TO, signal });
  if (shape === "none") return NO_SUMMARY;
  if (!("summary" in shape))
    return `a fleet of ${shape.cells} cells, read whole (exact to the moment)`;
  const { summary, wide, present, byModule } = shape;
  const allNodes = allNodesOf(present, byModule).filter((node) => narrowed(query, node));
  const cells = narrowedCells(byModule, query);
  // Narrowed to a node, every cell of it is read: its attention and differences are whole.
  const pageCells = query.node === undefined ? cells.page : pageOf(cells.page, query);
  const pageNodes = pageOf(allNodes, query);
  const read = cells.page;
  const keys = await readPageKeys(bus, { summary, nodes: pageNodes, cells: read, signal });
  const state = fleetStateOf(wide, keys, options.now.getTime());
  const presentSet = new Set(present);
  const assigned = ({ node, module }: Cell): boolean =>
    wide.assignments.has(nodeModuleKey(node, module)) ||
    (wide.assignments.has(`all.${module}`) && presentSet.has(node));
  const reasons = new Map<string, CellReason>();
  for (const c of read)
    if (assigned(c))
      reasons.set(nodeModuleKey(c.node, c.module), cellReason(state, c.node, c.module));
  const { attention, attentionTotal } = attentionOf(summary, query, read, reasons);
  const { differences, differencesTotal } = await differencesOf(bus, {
    summary,
    query,
    read,
    found: keys.differences,
    signal,
  });
  return {
    at: options.now.toISOString(),
    nodes: pageNodes.map((node) => statusNode(node, state.presence.get(node), state.now)),
    modules: pageCells.map(({ node, module }) =>
      statusCell(nodeModuleKey(node, module), node, module, state, reasons),
    ),
    differences,
    asks: [...wide.asks.values()]
      .filter((a) => !wide.answers.has(a.id))
      .sort((a, b) => cmp(a.at, b.at)),
    conditions: wide.conditions
      .filter((c) => c.resolved !== true)
      .sort((a, b) => cmp(b.at, a.at))
      .slice(0, RECENT_CONDITIONS)
      .map((c) => ({ ...c, subject: conditionSubject(c.module, c.name) })),
    attention: pageOf(attention, query),
    summary: { nodes: summary.nodes, cells: summary.cells, modules: summary.modules },
    page: pageInfo(query, {
      nodes: allNodes.length,
      modules: cells.total,
      differences: differencesTotal,
      attention: attentionTotal,
    }),
    source: { kind: "summary", at: summary.at },
  };
}

/**
 * The keys of the page's nodes and cells: a node's composition only where a cell's want is not
 * what it runs (only there is it a reason), a difference only when the summary lacks some.
 */
async function readPageKeys(
  bus: MeshBus,
  page: {
    readonly summary: Summary;
    readonly nodes: readonly string[];
    readonly cells: readonly Cell[];
    readonly signal: AbortSignal | undefined;
  },
): Promise<NodeKeys> {
  const { summary, cells: read, signal } = page;
  const known = differencesIfWhole(summary);
  const keys = await readNodeKeys(bus, {
    nodes: [...page.nodes, ...read.map((c) => c.node)],
    compositions: [],
    cells: read,
    ...(known === undefined ? {} : { differences: known }),
    ...(signal === undefined ? {} : { signal }),
  });
  const unapplied = read.filter((c) => {
    const key = nodeModuleKey(c.node, c.module);
    const want = keys.wants.get(key);
    return want !== undefined && keys.have.get(key)?.build !== want.build;
  });
  const { compositions } = await readNodeKeys(bus, {
    nodes: [],
    compositions: unapplied.map((c) => c.node),
    cells: [],
    ...(signal === undefined ? {} : { signal }),
  });
  return { ...keys, compositions };
}

/**
 * The cells inside the query's narrowing, by module then node: how many, and the page of them —
 * walked, not listed (10,000 nodes × 20 modules are 200,000 cells). Narrowed to a node, the page
 * is every cell of it (at most one per module).
 */
function narrowedCells(
  byModule: ReadonlyMap<string, readonly string[]>,
  query: StatusQuery,
): { total: number; page: Cell[] } {
  const page: Cell[] = [];
  let total = 0;
  for (const [module, nodes] of byModule) {
    if (query.module !== undefined && module !== query.module) continue;
    if (query.node !== undefined) {
      if (nodes.includes(query.node)) {
        page.push({ node: query.node, module });
        total += 1;
      }
      continue;
    }
    // The part of this module's cells that falls on the page.
    const start = Math.max(0, query.from - total);
    const end = Math.min(nodes.length, query.from + query.limit - total);
    for (let i = start; i < end; i++) page.push({ node: nodes[i] as string, module });
    total += nodes.length;
  }
  return { total, page };
}

/** What needs attention: a node's own, whole; else the summary's first, narrowed, and its count. */
function attentionOf(
  summary: Summary,
  query: StatusQuery,
  read: readonly Cell[],
  reasons: ReadonlyMap<string, CellReason>,
): { attention: CellReason[]; attentionTotal: number } {
  if (query.node !== undefined) {
    const attention = read.flatMap((c) => {
      const r = reasons.get(nodeModuleKey(c.node, c.module));
      return r?.state === "not-running" ? [r] : [];
    });
    return { attention, attentionTotal: attention.length };
  }
  const attention = summary.attention.first.flatMap(({ fix, ...c }): CellReason[] =>
    narrowed(query, c.node, c.module) ? [fix === undefined ? c : { ...c, fix }] : [],
  );
  const total =
    query.module === undefined
      ? summary.attention.cells
      : (summary.modules.find((m) => m.module === query.module)?.notRunning ?? attention.length);
  return { attention, attentionTotal: total };
}

/**
 * A page of the differences: of a node's own, whole; else of the summary's, when it carries
 * them all or the page falls within its first; else read by key (decision 0218): the keys of
 * `mesh-differences` listed (narrowed to the module), and only the page's values read.
 */
async function differencesOf(
  bus: MeshBus,
  o: {
    readonly summary: Summary;
    readonly query: StatusQuery;
    readonly read: readonly Cell[];
    readonly found: ReadonlyMap<string, Difference>;
    readonly signal: AbortSignal | undefined;
  },
): Promise<{ differences: StatusReport["differences"]; differencesTotal: number }> {
  const { summary, query, read, found } = o;
  if (query.node !== undefined) {
    const differences = read
      .map((c) => nodeModuleKey(c.node, c.module))
      .sort()
      .flatMap((key) => {
        const d = found.get(key);
        return d === undefined ? [] : [{ ...d, ...splitKey(key) }];
      });
    return { differences: pageOf(differences, query), differencesTotal: differences.length };
  }
  const differences = summary.differences.first.flatMap(({ key, difference }) => {
    const cell = splitKey(key);
    return narrowed(query, cell.node, cell.module) ? [{ ...cell, ...difference }] : [];
  });
  const page = pageOf(differences, query);
  if (summary.differences.first.length >= summary.differences.total)
    return { differences: page, differencesTotal: differences.length };
  if (query.module === undefined && query.from + query.limit <= differences.length)
    return { differences: page, differencesTotal: summary.differences.total };
  return differencesByKey(bus, query, o.signal);
}

/** A page of the differences, by key: every key listed, the page's values read. */
async function differencesByKey(
  bus: MeshBus,
  query: StatusQuery,
  signal: AbortSignal | undefined,
): Promise<{ differences: StatusReport["differences"]; differencesTotal: number }> {
  const bucket = await KvBucket.open(bus, Bucket.differences);
  const options = signal === undefined ? {} : { signal };
  const keys = await bucket.keys(query.module === undefined ? ">" : `*.${query.module}`, options);
  const page = keys.slice(query.from, query.from + query.limit);
  const values = await Promise.all(page.map((key) => bucket.get(key, options)));
  const differences = page.flatMap((key, i) => {
    const d = values[i]?.value;
    return d === undefined ? [] : [{ ...d, ...splitKey(key) }];
  });
  return { differences, differencesTotal: keys.length };
}

function statusNode(
  node: string,
  presence: Parameters<typeof nodeState>[0],
  now: number,
): StatusNode {
  if (presence === undefined)
    return { node, present: false, heartbeat: null, since: null, facts: null };
  return {
    node,
    present: nodeState(presence, now) === "present",
    heartbeat: presence.heartbeat,
    since: presence.heartbeat,
    facts: presence.facts,
  };
}

function splitKey(key: string): Cell {
  const dot = key.indexOf(".");
  return { node: key.slice(0, dot), module: key.slice(dot + 1) };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
