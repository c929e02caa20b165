/**
 * One read model of the fleet (issue 10.5): the nodes, present or gone by the one threshold,
 * every assigned (node, module) with its state, reason and fix, and what needs attention. Used
 * by `mesh status`; the view reads the same.
 */
import { ALL_NODES, nodeModuleKey, parseTargetModuleKey, type Presence } from "@mesh/protocol";
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
  const assigned = assignedCells(state);
  const names = new Set<string>(state.presence.keys());
  for (const { node } of assigned) names.add(node);
  const nodes = [...names].sort().map((node): FleetNode => {
    const p = state.presence.get(node);
    const base = { node, state: nodeState(p, state.now) };
    return p === undefined ? base : { ...base, heartbeat: p.heartbeat, facts: p.facts };
  });
  const cells = assigned.map(({ node, module }) => cellReason(state, node, module));
  const inCells = new Set(assigned.map(({ node, module }) => nodeModuleKey(node, module)));
  const leaving: Array<{ node: string; module: string }> = [];
  for (const key of new Set([...state.wants.keys(), ...state.have.keys()])) {
    const cell = parse(key);
    if (cell === undefined || inCells.has(key)) continue;
    if (state.wants.has(key) || state.have.get(key)?.health !== "stopped") leaving.push(cell);
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
  const out = new Map<string, { node: string; module: string }>();
  for (const key of state.assignments.keys()) {
    let parsed;
    try {
      parsed = parseTargetModuleKey(key);
    } catch {
      continue;
    }
    const { target, module } = parsed;
    const targets = "node" in target ? [target.node] : [...state.presence.keys()];
    for (const node of targets) {
      if (node !== ALL_NODES) out.set(nodeModuleKey(node, module), { node, module });
    }
  }
  return [...out.values()].sort(byModuleThenNode);
}

function parse(key: string): { node: string; module: string } | undefined {
  try {
    const { target, module } = parseTargetModuleKey(key);
    return "node" in target ? { node: target.node, module } : undefined;
  } catch {
    return undefined;
  }
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
