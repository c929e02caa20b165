/**
 * One read model of the fleet (issue 10.5): the nodes, present or gone by the one threshold,
 * every assigned (node, module) with its state, reason and fix, and what needs attention. Used
 * by `mesh status`; the view reads the same.
 */
import { ALL_NODES, cellOfKey, parseTargetModuleKey, type Presence } from "@mesh/protocol";
import { cellReason, type CellReason } from "./reason.js";
import { nodeState, type FleetState, type NodeState } from "./state.js";

export interface FleetNode {
  readonly node: string;
  readonly state: NodeState;
  /** The last heartbeat, when the node was ever present. */
  readonly heartbeat?: string;
  readonly facts?: Presence["facts"];
}

export interface FleetView {
  readonly nodes: readonly FleetNode[];
  /** Every assigned (node, module), sorted by module then node. */
  readonly cells: readonly CellReason[];
  /** Wanted or running where nothing assigns it any more: the mesh is taking it away. */
  readonly leaving: ReadonlyArray<{ readonly node: string; readonly module: string }>;
  /** The cells that are not running, and the nodes that are gone. */
  readonly attention: {
    readonly cells: readonly CellReason[];
    readonly nodes: readonly FleetNode[];
  };
}

export function readFleet(state: FleetState): FleetView {
  const byModule = assignedByModule(state);
  const names = new Set<string>(state.presence.keys());
  for (const nodes of byModule.values()) for (const node of nodes) names.add(node);
  const nodes = [...names].sort().map((node): FleetNode => {
    const p = state.presence.get(node);
    const base = { node, state: nodeState(p, state.now) };
    return p === undefined ? base : { ...base, heartbeat: p.heartbeat, facts: p.facts };
  });
  // Each node judged once, not once per module.
  const where = new Map(nodes.map((n) => [n.node, n.state]));
  const cells: CellReason[] = [];
  const inCells = new Set<string>();
  for (const [module, moduleNodes] of byModule) {
    for (const node of moduleNodes) {
      cells.push(cellReason(state, node, module, where.get(node)));
      inCells.add(`${node}.${module}`);
    }
  }
  const leaving: Array<{ node: string; module: string }> = [];
  const seen = new Set<string>();
  for (const map of [state.wants, state.have] as const) {
    for (const key of map.keys()) {
      // Most keys are assigned cells: those are skipped before any parsing.
      if (inCells.has(key) || seen.has(key)) continue;
      seen.add(key);
      const cell = cellOfKey(key);
      if (cell === undefined) continue;
      if (state.wants.has(key) || state.have.get(key)?.health !== "stopped") leaving.push(cell);
    }
  }
  leaving.sort(byModuleThenNode);
  return {
    nodes,
    cells,
    leaving,
    attention: {
      cells: cells.filter((c) => c.state === "not-running"),
      nodes: nodes.filter((n) => n.state === "gone"),
    },
  };
}

/** Every (node, module) an assignment places: a node's own, and `all` on every known node. */
export function assignedCells(state: FleetState): Array<{ node: string; module: string }> {
  const out: Array<{ node: string; module: string }> = [];
  for (const [module, nodes] of assignedByModule(state))
    for (const node of nodes) out.push({ node, module });
  return out;
}

/**
 * The nodes each module is placed on, modules and nodes sorted: a node's own assignment, and
 * `all` on every node present once. The presence keys are sorted once for every `all` module.
 */
function assignedByModule(state: FleetState): Map<string, string[]> {
  const everywhere = new Set<string>();
  const own = new Map<string, Set<string>>();
  for (const key of state.assignments.keys()) {
    let parsed;
    try {
      parsed = parseTargetModuleKey(key);
    } catch {
      continue;
    }
    const { target, module } = parsed;
    if (!("node" in target)) everywhere.add(module);
    else if (target.node !== ALL_NODES) {
      const set = own.get(module) ?? new Set<string>();
      set.add(target.node);
      own.set(module, set);
    }
  }
  const present =
    everywhere.size === 0 ? [] : [...state.presence.keys()].filter((n) => n !== ALL_NODES).sort();
  const presentSet = new Set(present);
  const out = new Map<string, string[]>();
  for (const module of [...new Set([...everywhere, ...own.keys()])].sort()) {
    const mine = [...(own.get(module) ?? [])];
    if (!everywhere.has(module)) out.set(module, mine.sort());
    else {
      const more = mine.filter((n) => !presentSet.has(n));
      out.set(module, more.length === 0 ? present : [...present, ...more].sort());
    }
  }
  return out;
}

const byModuleThenNode = (
  a: { node: string; module: string },
  b: { node: string; module: string },
): number =>
  a.module !== b.module
    ? a.module < b.module
      ? -1
      : 1
    : a.node < b.node
      ? -1
      : a.node > b.node
        ? 1
        : 0;
