/**
 * The fleet as a page sees it, computed on the server so what a page gets stays bounded: the
 * summary (numbers and the first differences) and a grid page (a window of the nodes). Pure:
 * the maps and the clock come in.
 */
import {
  PRESENCE_GONE_MS,
  type CompositionVerdict,
  type Difference,
  type Have,
  type Presence,
  type Put,
  type Want,
} from "@mesh/protocol";
import {
  GRID_MAX_MODULES,
  GRID_MAX_NODES,
  type FleetSummary,
  type GridCell,
  type GridColumn,
  type GridPage,
  type GridQuery,
  type NodeState,
} from "./browser/wire.js";

/** The differences a summary carries; the rest are counted. */
const FIRST_DIFFERENCES = 100;

export interface FleetInput {
  /** Milliseconds since the epoch: what "gone" is judged against. */
  readonly now: number;
  readonly modules: ReadonlyMap<string, unknown>;
  readonly presence: ReadonlyMap<string, Presence>;
  /** `<target>.<module>`. */
  readonly assignments: ReadonlyMap<string, unknown>;
  readonly wants: ReadonlyMap<string, Want>;
  readonly have: ReadonlyMap<string, Have>;
  readonly differences: ReadonlyMap<string, Difference>;
  readonly compositions: ReadonlyMap<string, CompositionVerdict>;
  readonly puts: ReadonlyMap<string, Put>;
}

/** What every grid page and the summary are read from, computed once per fleet version. */
export interface FleetIndex {
  readonly version: number;
  /** Every node any source names, sorted. */
  readonly nodes: readonly string[];
  /** Every module any source names, sorted. */
  readonly modules: readonly string[];
  readonly nodeStates: ReadonlyMap<string, NodeState>;
  /** The (node, module) pairs that need attention. */
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

/** Present, gone (not heard for PRESENCE_GONE_MS), or never seen. */
export function nodeState(presence: Presence | undefined, now: number): NodeState {
  if (presence === undefined) return "never";
  const beat = Date.parse(presence.heartbeat);
  return Number.isFinite(beat) && now - beat < PRESENCE_GONE_MS ? "present" : "gone";
}

/**
 * Whether a cell needs attention: it differs, or it is not healthy where it is wanted, or it runs
 * unhealthy (not stopped) where it is not.
 */
function cellTroubled(input: FleetInput, key: string): boolean {
  const want = input.wants.get(key);
  const have = input.have.get(key);
  if (input.differences.has(key)) return true;
  if (want !== undefined && have?.health !== "healthy") return true;
  return have !== undefined && have.health !== "healthy" && have.health !== "stopped";
}

export function indexFleet(input: FleetInput, version: number): FleetIndex {
  const nodeNames = new Set<string>(input.presence.keys());
  const moduleNames = new Set<string>(input.modules.keys());
  for (const key of input.assignments.keys()) moduleNames.add(split(key)[1]);
  // One pass over every (node, module) any source names.
  const seen = new Set<string>();
  const troubled: Array<readonly [string, string]> = [];
  const visit = (key: string): void => {
    if (seen.has(key)) return;
    seen.add(key);
    const cell = split(key);
    nodeNames.add(cell[0]);
    moduleNames.add(cell[1]);
    if (cellTroubled(input, key)) troubled.push(cell);
  };
  for (const key of input.wants.keys()) visit(key);
  for (const key of input.have.keys()) visit(key);
  for (const key of input.differences.keys()) visit(key);
  const nodes = [...nodeNames].sort();
  const nodeStates = new Map(nodes.map((n) => [n, nodeState(input.presence.get(n), input.now)]));
  const troubledNodes = new Set(
    nodes.filter(
      (n) => nodeStates.get(n) !== "present" || input.compositions.get(n)?.verdict === "refused",
    ),
  );
  const modules = [...moduleNames].sort();
  const rest = { version, nodes, modules, nodeStates, troubled, troubledNodes };
  const placements = placeModules(input);
  return { ...rest, placements, summary: summarise(input, rest) };
}

function summarise(
  input: FleetInput,
  index: Omit<FleetIndex, "summary" | "placements">,
): FleetSummary {
  const states = { present: 0, gone: 0, never: 0 };
  for (const state of index.nodeStates.values()) states[state] += 1;
  const cells = { healthy: 0, starting: 0, failing: 0, stopped: 0, missing: 0 };
  for (const have of input.have.values()) cells[have.health] += 1;
  for (const key of input.wants.keys()) if (!input.have.has(key)) cells.missing += 1;
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

function gridCell(input: FleetInput, node: string, module: string): GridCell | undefined {
  const key = `${node}.${module}`;
  const want = input.wants.get(key);
  const have = input.have.get(key);
  const difference = input.differences.get(key);
  if (want === undefined && have === undefined && difference === undefined) return undefined;
  const put = input.puts.get(key) ?? input.puts.get(`all.${module}`);
  return {
    ...(want === undefined ? {} : { want }),
    ...(have === undefined ? {} : { have }),
    ...(difference === undefined ? {} : { difference }),
    ...(put === undefined ? {} : { put }),
  };
}

/** Where the operator placed each module: every node, or some nodes. */
function placeModules(input: FleetInput): Map<string, string> {
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
      list.includes("all") ? "on every node" : `on ${list.sort().join(", ")}`,
    ]),
  );
}
