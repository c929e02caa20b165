/**
 * The fleet as a page sees it, computed on the server so what a page gets stays bounded: the
 * summary (numbers and the first differences) and a grid page (a window of the nodes). Presence,
 * each assigned cell's verdict (its reason and fix) and what needs attention come from the one
 * read model of the fleet in @mesh/core, the one `mesh status` shows. Pure: the maps and the
 * clock come in.
 */
import { cellReason, nodeState, readFleet, type FleetState } from "@mesh/core";
import { ALL_NODES, PRESENCE_GONE_MS, type Difference, type Put } from "@mesh/protocol";
import {
  GRID_MAX_MODULES,
  GRID_MAX_NODES,
  type CellVerdict,
  type FleetSummary,
  type GridCell,
  type GridColumn,
  type GridPage,
  type GridQuery,
  type NodeState,
} from "./browser/wire.js";

/** The differences a summary carries; the rest are counted. */
const FIRST_DIFFERENCES = 100;

/** The read model's state, and the puts (pins) the grid shows. */
export type FleetInput = FleetState & {
  /** `<node>.<module>` or `all.<module>`. */
  readonly puts: ReadonlyMap<string, Put>;
};

/** What every grid page and the summary are read from, computed once per fleet version. */
export interface FleetIndex {
  readonly version: number;
  /** Every node any source names, sorted. */
  readonly nodes: readonly string[];
  /** Every module any source names, sorted. */
  readonly modules: readonly string[];
  readonly nodeStates: ReadonlyMap<string, NodeState>;
  /** The assigned (node, module) pairs the read model says are not running. */
  readonly troubled: ReadonlyArray<readonly [node: string, module: string]>;
  /** Nodes that need attention themselves: gone, or their composition refused. */
  readonly troubledNodes: ReadonlySet<string>;
  /** Where the operator placed each module: "on every node", "on a, b"; absent: not assigned. */
  readonly placements: ReadonlyMap<string, string>;
  readonly summary: FleetSummary;
}

const split = (key: string): [string, string] => {
  const dot = key.indexOf(".");
  return [key.slice(0, dot), key.slice(dot + 1)];
};

export function indexFleet(input: FleetInput, version: number): FleetIndex {
  const fleet = readFleet(input);
  const nodeNames = new Set<string>(fleet.nodes.map((n) => n.node));
  const moduleNames = new Set<string>(input.registrations.keys());
  for (const key of input.assignments.keys()) moduleNames.add(split(key)[1]);
  // Cells the read model does not place (wanted or running where nothing assigns them any more)
  // still name their node and module.
  for (const source of [input.wants, input.have, input.differences]) {
    for (const key of source.keys()) {
      const [node, module] = split(key);
      nodeNames.add(node);
      moduleNames.add(module);
    }
  }
  const nodes = [...nodeNames].sort();
  const nodeStates = new Map(nodes.map((n) => [n, nodeState(input.presence.get(n), input.now)]));
  const troubledNodes = new Set(fleet.attention.nodes.map((n) => n.node));
  for (const [node, verdict] of input.compositions) {
    if (verdict.verdict === "refused") troubledNodes.add(node);
  }
  const cells = { healthy: 0, starting: 0, notRunning: 0 };
  for (const cell of fleet.cells)
    cells[cell.state === "not-running" ? "notRunning" : cell.state] += 1;
  const index = {
    version,
    nodes,
    modules: [...moduleNames].sort(),
    nodeStates,
    troubled: fleet.attention.cells.map((c) => [c.node, c.module] as const),
    troubledNodes,
    placements: placeModules(input),
  };
  return { ...index, summary: summarise(input, index, cells) };
}

function summarise(
  input: FleetInput,
  index: Omit<FleetIndex, "summary">,
  cells: FleetSummary["cells"],
): FleetSummary {
  const states = { present: 0, gone: 0, never: 0 };
  for (const state of index.nodeStates.values()) states[state] += 1;
  const first = [...input.differences.keys()]
    .sort()
    .slice(0, FIRST_DIFFERENCES)
    .map((key) => ({ key, difference: input.differences.get(key) as Difference }));
  return {
    version: index.version,
    nodes: { total: index.nodes.length, ...states },
    modules: index.modules.length,
    cells,
    attention: { cells: index.troubled.length, nodes: index.troubledNodes.size },
    differences: { total: input.differences.size, first },
    presenceGoneMs: PRESENCE_GONE_MS,
  };
}

/** A grid query from a URL's parameters, bounded. */
export function gridQuery(params: URLSearchParams): GridQuery {
  const int = (name: string, fallback: number): number => {
    const value = Number.parseInt(params.get(name) ?? "", 10);
    return Number.isFinite(value) && value >= 0 ? value : fallback;
  };
  return {
    from: int("from", 0),
    count: Math.max(1, Math.min(GRID_MAX_NODES, int("count", 50))),
    filter: (params.get("filter") ?? "").trim().toLowerCase().slice(0, 200),
    attention: params.get("attention") === "1",
  };
}

/** The grid's nodes and modules after the filter and the attention switch, then its window. */
export function gridPage(input: FleetInput, index: FleetIndex, query: GridQuery): GridPage {
  const { rows, columns } = narrow(index, query);
  const window = columns.slice(query.from, query.from + query.count);
  const shownRows = rows.slice(0, GRID_MAX_MODULES);
  const cells: Record<string, GridCell> = {};
  for (const node of window) {
    for (const module of shownRows) {
      const cell = gridCell(input, node, module);
      if (cell !== undefined) cells[`${node}.${module}`] = cell;
    }
  }
  return {
    version: index.version,
    at: new Date(input.now).toISOString(),
    query,
    totals: { nodes: index.nodes.length, modules: index.modules.length },
    matched: { nodes: columns.length, modules: rows.length },
    columns: window.map((node) => gridColumn(input, index, node)),
    rows: shownRows.map((module) => ({
      module,
      placement: index.placements.get(module) ?? "not assigned",
    })),
    cells,
  };
}

/** The filter (a module's name shows its row on every node; a node's, its column), then attention. */
function narrow(
  index: FleetIndex,
  query: GridQuery,
): { rows: readonly string[]; columns: readonly string[] } {
  const matches = (name: string): boolean => query.filter === "" || name.includes(query.filter);
  const rowsByName = index.modules.filter(matches);
  const columnsByName = index.nodes.filter(matches);
  if (query.filter !== "" && rowsByName.length === 0 && columnsByName.length === 0) {
    return { rows: [], columns: [] };
  }
  const rows = rowsByName.length > 0 ? rowsByName : index.modules;
  const columns = columnsByName.length > 0 ? columnsByName : index.nodes;
  if (!query.attention) return { rows, columns };
  const columnSet = new Set(columns);
  const rowSet = new Set(rows);
  const troubledRows = new Set<string>();
  for (const [node, module] of index.troubled) {
    if (columnSet.has(node) && rowSet.has(module)) troubledRows.add(module);
  }
  const troubledColumns = new Set<string>();
  for (const [node, module] of index.troubled) {
    if (troubledRows.has(module)) troubledColumns.add(node);
  }
  return {
    rows: rows.filter((m) => troubledRows.has(m)),
    columns: columns.filter((n) => index.troubledNodes.has(n) || troubledColumns.has(n)),
  };
}

function gridColumn(input: FleetInput, index: FleetIndex, node: string): GridColumn {
  const presence = input.presence.get(node);
  const verdict = input.compositions.get(node);
  return {
    node,
    state: index.nodeStates.get(node) ?? "never",
    ...(presence === undefined ? {} : { presence }),
    ...(verdict === undefined ? {} : { verdict }),
  };
}

/**
 * One (node, module): what is wanted, runs, differs and is pinned, and for an assigned module the
 * read model's verdict. Placed as the read model places it: a node's own assignment, or `all` on
 * every node ever present.
 */
function gridCell(input: FleetInput, node: string, module: string): GridCell | undefined {
  const key = `${node}.${module}`;
  const want = input.wants.get(key);
  const have = input.have.get(key);
  const difference = input.differences.get(key);
  const assigned =
    input.assignments.has(key) ||
    (input.assignments.has(`${ALL_NODES}.${module}`) && input.presence.has(node));
  if (!assigned && want === undefined && have === undefined && difference === undefined) {
    return undefined;
  }
  const put = input.puts.get(key) ?? input.puts.get(`${ALL_NODES}.${module}`);
  const verdict = assigned ? verdictOf(input, node, module) : undefined;
  return {
    ...(want === undefined ? {} : { want }),
    ...(have === undefined ? {} : { have }),
    ...(difference === undefined ? {} : { difference }),
    ...(put === undefined ? {} : { put }),
    ...(verdict === undefined ? {} : { verdict }),
  };
}

function verdictOf(input: FleetInput, node: string, module: string): CellVerdict {
  const { state, reason, fix } = cellReason(input, node, module);
  return fix === undefined ? { state, reason } : { state, reason, fix };
}

/** Where the operator placed each module: every node, or some nodes. */
export function placeModules(input: Pick<FleetInput, "assignments">): Map<string, string> {
  const targets = new Map<string, string[]>();
  for (const key of input.assignments.keys()) {
    const [target, module] = split(key);
    const list = targets.get(module);
    if (list === undefined) targets.set(module, [target]);
    else list.push(target);
  }
  return new Map(
    [...targets].map(([module, list]) => [
      module,
      list.includes(ALL_NODES) ? "on every node" : `on ${list.sort().join(", ")}`,
    ]),
  );
}
