/**
 * The assigner's rules (docs/design.md "Delivery"): from a snapshot of the buckets, what each
 * node should run, the composition check of each node's wanted set, every difference between
 * want, composed and have, and the asks an operator must answer. Pure: the same snapshot gives
 * the same result, whatever order its maps were filled in; the shell writes `writes` and says
 * `conditions`, nothing else (decision 0030).
 *
 * The rules are an ordered chain, one file each in ./rules/, in protocol's `RULE_ORDER`:
 * placed, built, put, newest, set-back, halt, waves, widening (each for one module on one node), then checked
 * (the node's whole set). Adding a rule is a file there and a name in that order.
 *
 * A pass may be scoped to some nodes (`options.nodes`): the shell passes the nodes a change
 * touches, so the cost of a pass grows with the change, not the fleet. A pass over every node
 * gives the same decisions for those nodes.
 */
import {
  ALL_NODES,
  Bucket,
  nodeModuleKey,
  targetModuleKey,
  type Ask,
  type CompositionVerdict,
  type ConfigRollout,
  type Difference,
  type Rollout,
  type Want,
} from "@mesh/protocol";
import { canonicalJson } from "../fingerprint.js";
import {
  AssignerConditionKind,
  cellConditionName,
  conditionName,
  noCauses,
  resolveEnded,
  type AssignerCondition,
  type ConditionCauses,
} from "./conditions.js";
import { differenceOf } from "./difference.js";
import {
  OPEN,
  cellOf,
  indexModules,
  type Cell,
  type Decision,
  type ModuleIndex,
  type PendingAsk,
  type Proposal,
  type Unwanted,
} from "./model.js";
import { planConfigRollouts, type ConfigRolloutWrite } from "./config-rollout-plan.js";
import { configRolloutWrites } from "./config-rollout-steps.js";
import { planRollouts, type RolloutPlan } from "./rollout-plan.js";
import { stepConditions } from "./rollout-steps.js";
import { CELL_RULES, NODE_RULES, type NodeSet } from "./rules/index.js";
import { allNodes, modulesByNode, modulesOf } from "./scope.js";
import type { AssignerSnapshot } from "./snapshot.js";

export type { Unwanted } from "./model.js";
export { askId, widen as widening } from "./rules/index.js";

export interface AssignOptions {
  /** Decide only these nodes; every node the snapshot knows when omitted (a full pass). */
  readonly nodes?: Iterable<string>;
}

/** One write the shell makes: a value to put, or undefined to delete the key. */
export type AssignerWrite =
  | { readonly bucket: typeof Bucket.wants; readonly key: string; readonly value: Want | undefined }
  | {
      readonly bucket: typeof Bucket.compositions;
      readonly key: string;
      readonly value: CompositionVerdict | undefined;
    }
  | {
      readonly bucket: typeof Bucket.differences;
      readonly key: string;
      readonly value: Difference | undefined;
    }
  | { readonly bucket: typeof Bucket.asks; readonly key: string; readonly value: Ask | undefined }
  | {
      readonly bucket: typeof Bucket.rollouts;
      readonly key: string;
      readonly value: Rollout | undefined;
    }
  | ConfigRolloutWrite;

/** What a pass decides of the cells and nodes it decides, filled in as it goes. */
interface Decided {
  /** `<node>.<module>` → the want decided (only where something is wanted). */
  readonly wants: Map<string, Want>;
  /** `<node>.<module>` → why nothing is wanted, for every module considered and not wanted. */
  readonly unwanted: Map<string, Unwanted>;
  readonly compositions: Map<string, CompositionVerdict>;
  readonly differences: Map<string, Difference>;
}

/** The same, read only. */
type ReadOnlyMaps<T> = {
  readonly [K in keyof T]: T[K] extends Map<infer A, infer B> ? ReadonlyMap<A, B> : T[K];
};

export interface AssignResult extends ReadOnlyMaps<Decided> {
  /** The nodes decided. */
  readonly nodes: readonly string[];
  /** Every ask that stands after this pass (outside the scope too). */
  readonly asks: ReadonlyMap<string, Ask>;
  /** Every module's rollout after this pass (decided over the whole fleet, whatever the scope). */
  readonly rollouts: ReadonlyMap<string, Rollout>;
  /** Every config rollout after this pass, by `<module>.<key>` (also whatever the scope). */
  readonly configRollouts: ReadonlyMap<string, ConfigRollout>;
  /** Only what differs from what stands (`snapshot.own`): a second pass over the result writes nothing. */
  readonly writes: readonly AssignerWrite[];
  /**
   * For the set-backs, failing builds kept and refused checks this pass wrote, and the
   * resolution of each open one (`own.conditions`) of the decided nodes whose cause has ended.
   */
  readonly conditions: readonly AssignerCondition[];
}

/** What a pass collects as it decides node after node. */
interface Pass extends Decided {
  readonly snapshot: AssignerSnapshot;
  readonly index: ReadonlyMap<string, ModuleIndex>;
  readonly rollouts: ReadonlyMap<string, RolloutPlan>;
  /** Ask id → the ask and the nodes in this pass's scope that wait on it. */
  readonly waiting: Map<string, { ask: PendingAsk; nodes: Set<string> }>;
  readonly writes: AssignerWrite[];
  readonly conditions: AssignerCondition[];
  /** Which conditions' causes stand after the decided nodes. */
  readonly causes: ConditionCauses;
  readonly allKeys: Map<string, string>;
  /** `<node>.<module>` wanted but left out by the composition (a filter on an adopted machine). */
  readonly filtered: Set<string>;
}

export function assign(snapshot: AssignerSnapshot, options: AssignOptions = {}): AssignResult {
  const full = options.nodes === undefined;
  const index = indexModules(snapshot);
  const rollouts = planRollouts(snapshot, index);
  const pass: Pass = {
    snapshot,
    index,
    rollouts,
    wants: new Map(),
    unwanted: new Map(),
    compositions: new Map(),
    differences: new Map(),
    waiting: new Map(),
    writes: [],
    conditions: [],
    causes: noCauses(),
    allKeys: new Map(),
    filtered: new Set(),
  };
  // A rollout's step moves cells outside the scope (a wave given, a halt): they are decided too.
  const moved = writeRollouts(pass);
  const configPlans = planConfigRollouts(snapshot, index);
  const configs = configRolloutWrites(snapshot, configPlans);
  pass.writes.push(...configs.writes);
  pass.conditions.push(...configs.conditions);
  const nodes = full
    ? [...allNodes(snapshot)].sort()
    : scopedNodes([...(options.nodes ?? []), ...moved]);
  const extra = full ? modulesByNode(snapshot) : new Map<string, Set<string>>();
  for (const node of nodes) decideNode(pass, node, modulesOf(snapshot, pass.index, node, extra));
  const asks = settleAsks(pass, full ? undefined : new Set(nodes));
  const open = snapshot.own.conditions;
  if (open.size > 0) {
    pass.conditions.push(...resolveEnded(open, full ? undefined : new Set(nodes), pass.causes));
  }
  const { wants, unwanted, compositions, differences, writes, conditions } = pass;
  const records = new Map([...rollouts].map(([m, p]) => [m, p.record]));
  return {
    nodes,
    wants,
    unwanted,
    compositions,
    differences,
    asks,
    rollouts: records,
    configRollouts: new Map([...configPlans].map(([k, p]) => [k, p.record])),
    writes,
    conditions,
  };
}

/**
 * Each module's rollout record that moved, written first (a later pass continues from it), with
 * the conditions of its step; the nodes of each moved rollout, which this pass must decide.
 */
function writeRollouts(pass: Pass): string[] {
  const own = pass.snapshot.own.rollouts;
  const moved: string[] = [];
  const modules = [...new Set([...own.keys(), ...pass.rollouts.keys()])].sort();
  for (const module of modules) {
    const before = own.get(module);
    const plan = pass.rollouts.get(module);
    const after = plan?.record;
    if (sameValue(before, after)) continue;
    pass.writes.push({ bucket: Bucket.rollouts, key: module, value: after });
    pass.conditions.push(...stepConditions(module, before, after));
    // A node admitted with nothing to keep (a node joining) moves no other cell, nor does a
    // record deleted (the module placed nowhere: the placement's change moves its cells).
    if (after === undefined || sameValue(stepOf(before), stepOf(after))) continue;
    moved.push(...(plan?.nodes ?? []));
  }
  return moved;
}

function scopedNodes(nodes: Iterable<string> | undefined): string[] {
  const out = new Set<string>();
  for (const n of nodes ?? []) if (n !== ALL_NODES) out.add(n);
  return [...out].sort();
}

/** Every rule for one node: the cell rules per module, then the node rules over the set. */
function decideNode(pass: Pass, node: string, modules: readonly string[]): void {
  const cells = new Map<string, Cell>();
  const proposals = new Map<string, Proposal>();
  const unwanted = new Map<string, Unwanted>();
  for (const module of modules) {
    const cell = cellOf(
      pass.snapshot,
      pass.index,
      node,
      module,
      allKeyOf(pass, module),
      pass.rollouts,
    );
    cells.set(module, cell);
    const decided = runCellRules(cell);
    if (decided.kind !== "open" && decided.ask !== undefined) wait(pass, decided.ask, node);
    if (decided.kind === "want") proposals.set(module, decided.proposal);
    else if (decided.kind === "none") unwanted.set(cell.key, decided.unwanted);
  }
  let set: NodeSet = { node, proposals, unwanted, composition: undefined, refused: [] };
  for (const rule of NODE_RULES) set = rule.decide({ node, cells }, set);
  for (const [key, u] of set.unwanted) pass.unwanted.set(key, u);
  // A module the composition leaves out (a filter on an adopted machine) stays wanted, and its
  // want says why it does not run there; it is no difference (issue 14.12).
  const leftOut = new Map(
    (set.composition?.ok === true ? set.composition.leftOut : []).map((l) => [l.module, l.reason]),
  );
  for (const [module, p] of set.proposals) {
    const fingerprint =
      set.composition?.ok === true ? set.composition.moduleFingerprints[module] : "";
    const filtered = leftOut.get(module);
    const key = nodeModuleKey(node, module);
    if (filtered !== undefined) pass.filtered.add(key);
    pass.wants.set(key, {
      build: p.usable.build.build,
      manifestDigest: p.usable.manifestDigest,
      fingerprint: fingerprint ?? "",
      rule: filtered === undefined ? p.rule : "checked",
      reason:
        filtered === undefined ? p.reason : `filtered on ${node}, so not run there: ${filtered}`,
    });
  }
  writeVerdict(pass, node, set);
  for (const cell of cells.values()) writeCell(pass, cell);
}

/** The cell rules in order; a `none` ends the chain. */
export function runCellRules(cell: Cell): Decision {
  let decided: Decision = OPEN;
  for (const rule of CELL_RULES) {
    decided = rule.decide(cell, decided);
    if (decided.kind === "none") break;
  }
  if (decided.kind === "open") {
    // Only when the module has no usable build, which `built` already said.
    return { kind: "none", unwanted: { rule: "built", reason: `no build of ${cell.module}` } };
  }
  return decided;
}

/** `all.<module>`, made once per module in a pass. */
function allKeyOf(pass: Pass, module: string): string {
  let key = pass.allKeys.get(module);
  if (key === undefined) {
    key = targetModuleKey({ all: true }, module);
    pass.allKeys.set(module, key);
  }
  return key;
}

function wait(pass: Pass, ask: PendingAsk, node: string): void {
  const entry = pass.waiting.get(ask.id) ?? { ask, nodes: new Set<string>() };
  entry.nodes.add(node);
  pass.waiting.set(ask.id, entry);
}

function writeVerdict(pass: Pass, node: string, set: NodeSet): void {
  const { composition, refused } = set;
  const verdict: CompositionVerdict | undefined =
    composition === undefined && refused.length === 0
      ? undefined
      : {
          node,
          verdict: composition === undefined || composition.ok ? "ok" : "refused",
          wanted: Object.fromEntries([...set.proposals].map(([m, p]) => [m, p.usable.build.build])),
          reasons: [
            ...refused.map((r) => `not advanced: ${r}`),
            ...(composition !== undefined && !composition.ok
              ? composition.refusals.map((r) => `${r.reason}; ${r.fix}`)
              : []),
          ],
        };
  if (verdict !== undefined) pass.compositions.set(node, verdict);
  const refusedName = conditionName(AssignerConditionKind.refused, node);
  if (verdict !== undefined && verdict.reasons.length > 0) pass.causes.standing.add(refusedName);
  if (sameValue(pass.snapshot.own.compositions.get(node), verdict)) return;
  pass.writes.push({ bucket: Bucket.compositions, key: node, value: verdict });
  if (verdict !== undefined && verdict.reasons.length > 0) {
    pass.conditions.push({
      name: refusedName,
      level: "warning",
      message: `the composition check on ${node} refused: ${verdict.reasons.join(" | ")}`,
      node,
    });
  }
}

function writeCell(pass: Pass, cell: Cell): void {
  const { key, node, module } = cell;
  const want = pass.wants.get(key);
  // A set-back, or a failing build kept because nothing else ran healthy: its cause stands as
  // long as the want is so, and it is said once, as written.
  const kept = want?.rule === "newest" && cell.marks.has(want.build);
  const kind =
    want?.rule === "set-back"
      ? AssignerConditionKind.setBack
      : kept
        ? AssignerConditionKind.failing
        : undefined;
  const name = kind === undefined ? undefined : cellConditionName(kind, node, module);
  if (name !== undefined) pass.causes.standing.add(name);
  if (pass.snapshot.own.conditions.size > 0) {
    // Only while some condition is open does a pass need to name the cells it decided.
    for (const k of [AssignerConditionKind.setBack, AssignerConditionKind.failing]) {
      pass.causes.cells.set(cellConditionName(k, node, module), { module, want });
    }
  }
  if (!sameValue(cell.previous, want)) {
    pass.writes.push({ bucket: Bucket.wants, key, value: want });
    if (want !== undefined && name !== undefined) {
      pass.conditions.push({ name, level: "warning", message: want.reason, node });
    }
  }
  // A filtered want is not run: only something composed or running there is a difference.
  const difference = pass.filtered.has(key)
    ? differenceOf(pass.snapshot, node, cell.module, undefined, want)
    : differenceOf(pass.snapshot, node, cell.module, want, pass.unwanted.get(key));
  if (difference !== undefined) pass.differences.set(key, difference);
  if (!sameValue(pass.snapshot.own.differences.get(key), difference)) {
    pass.writes.push({ bucket: Bucket.differences, key, value: difference });
  }
}

/** Asks: the nodes outside the scope keep their place in an ask; those inside are as decided. */
function settleAsks(pass: Pass, scope: ReadonlySet<string> | undefined): Map<string, Ask> {
  const own = pass.snapshot.own.asks;
  const asks = new Map<string, Ask>();
  for (const id of [...new Set([...own.keys(), ...pass.waiting.keys()])].sort()) {
    const existing = own.get(id);
    const pending = pass.waiting.get(id);
    const keep = scope === undefined ? [] : (existing?.nodes ?? []).filter((n) => !scope.has(n));
    const nodes = [...new Set([...keep, ...(pending?.nodes ?? [])])].sort();
    const source = pending?.ask ?? existing;
    const ask: Ask | undefined =
      nodes.length === 0 || source === undefined
        ? undefined
        : {
            id,
            what: source.what,
            module: source.module,
            build: source.build,
            nodes,
            at: existing?.at ?? pass.snapshot.now,
          };
    if (ask !== undefined) asks.set(id, ask);
    if (!sameValue(existing, ask)) pass.writes.push({ bucket: Bucket.asks, key: id, value: ask });
  }
  return asks;
}

/** A record without the nodes admitted: what the cells of nodes not reached read. */
function stepOf(record: Rollout | undefined): unknown {
  if (record === undefined) return undefined;
  const { admitted: _admitted, ...step } = record;
  return step;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonicalJson(a) === canonicalJson(b);
}

/** The bucket a write goes to, for the shell. */
export const ASSIGNER_WRITES = [
  Bucket.wants,
  Bucket.compositions,
  Bucket.differences,
  Bucket.asks,
  Bucket.rollouts,
  Bucket.config,
  Bucket.configWaves,
] as const;
