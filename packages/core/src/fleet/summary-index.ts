/**
 * The fleet's summary kept from the keys each burst of changes dirtied (issue 23.4), so a change
 * costs what it reaches, not the whole fleet: a heartbeat re-judges one node's cells, a module's
 * new build that module's cells, the clock the nodes whose heartbeat went stale since. What it
 * returns is `summarizeFleet` of the same state — the property test holds the two equal for any
 * sequence of changes — and each cell's state and reason is still core's `cellReason`.
 *
 * ```ts
 * const index = new SummaryIndex();
 * index.update(state, everyKey);                  // the first: everything
 * index.update(state, [{ source: "have", key: "n1.hello" }]);
 * ```
 *
 * A change names the map and key that moved (the conditions by any key: they are compared
 * module by module). The clock may only move forward; one that went back rebuilds it whole.
 */
import {
  ALL_NODES,
  PRESENCE_GONE_MS,
  cellOfKey,
  parseTargetModuleKey,
  type Summary,
} from "@mesh/protocol";
import { FirstOf } from "./first-of.js";
import { MinHeap } from "./min-heap.js";
import { cellReason, type CellReason } from "./reason.js";
import { nodeState, type FleetState, type NodeState } from "./state.js";
import { SUMMARY_FIRST, summaryCell, type SummaryOptions } from "./summary.js";

/** The maps of the fleet's state a change can name. */
export type FleetSource = Exclude<keyof FleetState, "now">;

export interface FleetChange {
  readonly source: FleetSource;
  readonly key: string;
}

type Counts = { assigned: number; healthy: number; starting: number; notRunning: number };
type CellCount = Exclude<keyof Counts, "assigned">;

interface Cell {
  readonly node: string;
  readonly module: string;
  reason: CellReason | undefined;
}

/** What one update has to judge again. */
interface Work {
  readonly nodes: Set<string>;
  readonly cellsOfNodes: Set<string>;
  readonly modules: Set<string>;
  readonly cells: Set<string>;
  readonly leaving: Set<string>;
  conditions: boolean;
}

/** The order the summary's lists go in: by module, then node. */
const orderKey = (node: string, module: string): string => `${module}\u0000${node}`;

export class SummaryIndex {
  readonly #k: number;
  #now = Number.NEGATIVE_INFINITY;
  #everywhere = new Set<string>();
  #presenceKeys = new Set<string>();
  #cells = new Map<string, Cell>();
  #moduleNodes = new Map<string, Set<string>>();
  #nodeModules = new Map<string, Set<string>>();
  #nodes = new Map<string, NodeState>();
  #nodeCounts: Record<NodeState, number> = { present: 0, gone: 0, never: 0 };
  /** When each node judged present turns gone without a heartbeat (stale entries skipped). */
  #expiries = new MinHeap<string>();
  #modules = new Map<string, Counts>();
  #counts: Counts = { assigned: 0, healthy: 0, starting: 0, notRunning: 0 };
  #attention: FirstOf;
  #leaving: FirstOf;
  #differences: FirstOf;
  #refused = new Set<string>();
  #buildModule = new Map<string, string>();
  #askModule = new Map<string, string>();
  #conditionsOf = new Map<string, string>();

  constructor(options: SummaryOptions = {}) {
    this.#k = options.first ?? SUMMARY_FIRST;
    this.#attention = new FirstOf(this.#k);
    this.#leaving = new FirstOf(this.#k);
    this.#differences = new FirstOf(this.#k);
  }

  /**
   * The earliest moment a node judged present turns gone unless heard again (Infinity when none
   * is): until then the clock alone moves nothing. Early rather than late — a node heard since
   * may still stand at its older moment, which the next update skips.
   */
  get horizon(): number {
    return this.#expiries.peek()?.at ?? Number.POSITIVE_INFINITY;
  }

  /** The summary of `state` at `state.now`, after the keys in `changes` moved since the last call. */
  update(state: FleetState, changes: Iterable<FleetChange>): Summary {
    let moved = changes;
    if (state.now < this.#now) {
      // The clock went back: a node gone may be present again without a change.
      this.#reset();
      moved = everyKey(state);
    } else if (this.#now === Number.NEGATIVE_INFINITY) moved = everyKey(state);
    this.#now = state.now;
    const work: Work = {
      nodes: new Set(),
      cellsOfNodes: new Set(),
      modules: new Set(),
      cells: new Set(),
      leaving: new Set(),
      conditions: false,
    };
    for (const change of moved) this.#note(state, change, work);
    if (work.conditions) this.#conditionsMoved(state, work);
    while ((this.#expiries.peek()?.at ?? Number.POSITIVE_INFINITY) <= state.now)
      work.nodes.add((this.#expiries.pop() as { value: string }).value);
    this.#judgeNodes(state, work);
    this.#judgeCells(state, work);
    this.#judgeLeaving(state, work);
    return this.#summary(state);
  }

  #reset(): void {
    const fresh = new SummaryIndex({ first: this.#k });
    this.#everywhere = fresh.#everywhere;
    this.#presenceKeys = fresh.#presenceKeys;
    this.#cells = fresh.#cells;
    this.#moduleNodes = fresh.#moduleNodes;
    this.#nodeModules = fresh.#nodeModules;
    this.#nodes = fresh.#nodes;
    this.#nodeCounts = fresh.#nodeCounts;
    this.#expiries = fresh.#expiries;
    this.#modules = fresh.#modules;
    this.#counts = fresh.#counts;
    this.#attention = fresh.#attention;
    this.#leaving = fresh.#leaving;
    this.#differences = fresh.#differences;
    this.#refused = fresh.#refused;
    this.#buildModule = fresh.#buildModule;
    this.#askModule = fresh.#askModule;
    this.#conditionsOf = fresh.#conditionsOf;
  }

  /** What one change reaches, noted in `work`; where cells are placed moves at once. */
  #note(state: FleetState, { source, key }: FleetChange, work: Work): void {
    switch (source) {
      case "presence":
        return this.#presenceMoved(state, key, work);
      case "assignments":
        return this.#assignmentMoved(state, key, work);
      case "registrations":
        work.modules.add(key);
        return;
      case "builds":
        return moved(this.#buildModule, key, state.builds.get(key)?.module, work.modules);
      case "asks":
        return moved(this.#askModule, key, state.asks.get(key)?.module, work.modules);
      case "answers":
        for (const ask of state.asks.values()) if (ask.id === key) work.modules.add(ask.module);
        return;
      case "differences":
        if (state.differences.has(key)) this.#differences.add(key);
        else this.#differences.delete(key);
        work.cells.add(key);
        return;
      case "wants":
      case "have":
        work.cells.add(key);
        work.leaving.add(key);
        return;
      case "compositions":
        if (state.compositions.get(key)?.verdict === "refused") this.#refused.add(key);
        else this.#refused.delete(key);
        work.cellsOfNodes.add(key);
        return;
      case "conditions":
        work.conditions = true;
        return;
    }
  }

  #presenceMoved(state: FleetState, node: string, work: Work): void {
    work.nodes.add(node);
    const has = state.presence.has(node);
    if (has === this.#presenceKeys.has(node)) return;
    if (has) this.#presenceKeys.add(node);
    else this.#presenceKeys.delete(node);
    for (const module of this.#everywhere) this.#place(state, node, module, work);
  }

  #assignmentMoved(state: FleetState, key: string, work: Work): void {
    let parsed;
    try {
      parsed = parseTargetModuleKey(key);
    } catch {
      return; // the read model skips a key it cannot read
    }
    const { target, module } = parsed;
    if ("node" in target) return this.#place(state, target.node, module, work);
    const has = state.assignments.has(key);
    if (has === this.#everywhere.has(module)) return;
    if (has) this.#everywhere.add(module);
    else this.#everywhere.delete(module);
    for (const node of this.#presenceKeys) this.#place(state, node, module, work);
    work.modules.add(module);
  }

  /** Places or removes the cell (node, module) as the assignments and presence say now. */
  #place(state: FleetState, node: string, module: string, work: Work): void {
    const key = `${node}.${module}`;
    const placed =
      (state.assignments.has(key) && ownAssignment(key)) ||
      (this.#everywhere.has(module) && this.#presenceKeys.has(node) && node !== ALL_NODES);
    const cell = this.#cells.get(key);
    if (placed === (cell !== undefined)) return;
    work.nodes.add(node);
    work.leaving.add(key);
    if (placed) {
      this.#cells.set(key, { node, module, reason: undefined });
      join(this.#moduleNodes, module, node);
      join(this.#nodeModules, node, module);
      work.cells.add(key);
      return;
    }
    this.#count(cell as Cell, -1);
    this.#cells.delete(key);
    leave(this.#moduleNodes, module, node);
    leave(this.#nodeModules, node, module);
  }

  /** Each module whose open warnings and errors changed is judged again. */
  #conditionsMoved(state: FleetState, work: Work): void {
    const now = new Map<string, string[]>();
    for (const c of state.conditions) {
      const said = now.get(c.module) ?? [];
      said.push(JSON.stringify(c));
      now.set(c.module, said);
    }
    const signatures = new Map([...now].map(([m, said]) => [m, said.sort().join("\n")]));
    for (const module of new Set([...signatures.keys(), ...this.#conditionsOf.keys()]))
      if (signatures.get(module) !== this.#conditionsOf.get(module)) work.modules.add(module);
    this.#conditionsOf = signatures;
  }

  #judgeNodes(state: FleetState, work: Work): void {
    for (const node of work.nodes) {
      const before = this.#nodes.get(node);
      const named = this.#presenceKeys.has(node) || this.#nodeModules.has(node);
      const presence = state.presence.get(node);
      const after = named ? nodeState(presence, state.now) : undefined;
      if (before !== undefined) this.#nodeCounts[before] -= 1;
      if (after === undefined) this.#nodes.delete(node);
      else {
        this.#nodes.set(node, after);
        this.#nodeCounts[after] += 1;
      }
      if (after === "present" && presence !== undefined)
        this.#expiries.push(Date.parse(presence.heartbeat) + PRESENCE_GONE_MS, node);
      // A gone node's reason names its last heartbeat.
      if (before !== after || after === "gone") work.cellsOfNodes.add(node);
    }
  }

  #judgeCells(state: FleetState, work: Work): void {
    const keys = new Set<string>();
    for (const key of work.cells) if (this.#cells.has(key)) keys.add(key);
    for (const module of work.modules)
      for (const node of this.#moduleNodes.get(module) ?? []) keys.add(`${node}.${module}`);
    for (const node of work.cellsOfNodes)
      for (const module of this.#nodeModules.get(node) ?? []) keys.add(`${node}.${module}`);
    for (const key of keys) {
      const cell = this.#cells.get(key) as Cell;
      const reason = cellReason(state, cell.node, cell.module, this.#nodes.get(cell.node));
      const before = cell.reason;
      if (
        before !== undefined &&
        before.state === reason.state &&
        before.reason === reason.reason &&
        before.fix === reason.fix
      )
        continue;
      this.#count(cell, -1);
      cell.reason = reason;
      this.#count(cell, 1);
    }
  }

  /** Adds (1) or takes away (-1) a judged cell from the counts and the attention list. */
  #count(cell: Cell, by: 1 | -1): void {
    const reason = cell.reason;
    if (reason === undefined) return;
    const state: CellCount = reason.state === "not-running" ? "notRunning" : reason.state;
    const line = this.#modules.get(cell.module) ?? {
      assigned: 0,
      healthy: 0,
      starting: 0,
      notRunning: 0,
    };
    line.assigned += by;
    line[state] += by;
    if (line.assigned === 0) this.#modules.delete(cell.module);
    else this.#modules.set(cell.module, line);
    this.#counts.assigned += by;
    this.#counts[state] += by;
    if (state !== "notRunning") return;
    if (by === 1) this.#attention.add(orderKey(cell.node, cell.module));
    else this.#attention.delete(orderKey(cell.node, cell.module));
  }

  #judgeLeaving(state: FleetState, work: Work): void {
    for (const key of work.leaving) {
      // An assigned cell is not leaving: most keys, decided without reading the key's names.
      if (this.#cells.has(key)) {
        const dot = key.indexOf(".");
        this.#leaving.delete(orderKey(key.slice(0, dot), key.slice(dot + 1)));
        continue;
      }
      const cell = cellOfKey(key);
      if (cell === undefined) continue;
      const have = state.have.get(key);
      const leaving = state.wants.has(key) || (have !== undefined && have.health !== "stopped");
      if (leaving) this.#leaving.add(orderKey(cell.node, cell.module));
      else this.#leaving.delete(orderKey(cell.node, cell.module));
    }
  }

  #summary(state: FleetState): Summary {
    let troubled = this.#nodeCounts.gone;
    for (const node of this.#refused) if (this.#nodes.get(node) !== "gone") troubled += 1;
    const fromOrder = (key: string): { node: string; module: string } => {
      const [module, node] = key.split("\u0000") as [string, string];
      return { node, module };
    };
    return {
      at: new Date(state.now).toISOString(),
      nodes: { total: this.#nodes.size, ...this.#nodeCounts },
      cells: { ...this.#counts, leaving: this.#leaving.size },
      modules: [...this.#modules]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([module, line]) => ({ module, ...line })),
      attention: {
        cells: this.#counts.notRunning,
        nodes: troubled,
        first: this.#attention.first().map((key) => {
          const { node, module } = fromOrder(key);
          return summaryCell(this.#cells.get(`${node}.${module}`)?.reason as CellReason);
        }),
      },
      leaving: { first: this.#leaving.first().map(fromOrder) },
      differences: {
        total: state.differences.size,
        first: this.#differences.first().flatMap((key) => {
          const difference = state.differences.get(key);
          return difference === undefined ? [] : [{ key, difference }];
        }),
      },
    };
  }
}

/** Every key of every map, as changes: what the first update (or one after the clock went back) reads. */
function* everyKey(state: FleetState): Iterable<FleetChange> {
  const maps = [
    ["presence", state.presence],
    ["assignments", state.assignments],
    ["registrations", state.registrations],
    ["builds", state.builds],
    ["wants", state.wants],
    ["have", state.have],
    ["differences", state.differences],
    ["compositions", state.compositions],
    ["asks", state.asks],
    ["answers", state.answers],
  ] as const;
  for (const [source, map] of maps) for (const key of map.keys()) yield { source, key };
  yield { source: "conditions", key: "" };
}

/** A key's module moved from what was held to `now`: both are judged again. */
function moved(
  held: Map<string, string>,
  key: string,
  now: string | undefined,
  modules: Set<string>,
): void {
  const before = held.get(key);
  if (before !== undefined) modules.add(before);
  if (now === undefined) held.delete(key);
  else {
    held.set(key, now);
    modules.add(now);
  }
}

/** Whether an assignment's key is a node's own (`<node>.<module>`, both names valid). */
const ownAssignment = (key: string): boolean => cellOfKey(key) !== undefined;

function join(index: Map<string, Set<string>>, key: string, member: string): void {
  const set = index.get(key) ?? new Set<string>();
  set.add(member);
  index.set(key, set);
}

function leave(index: Map<string, Set<string>>, key: string, member: string): void {
  const set = index.get(key);
  set?.delete(member);
  if (set?.size === 0) index.delete(key);
}
