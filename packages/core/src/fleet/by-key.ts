/**
 * The fleet read by key (decision 0090), its pure half: from what the bus's reads handed back
 * (`readModuleWide`, `listNodes`, `readNodeKeys` in `@mesh/bus`), which nodes each module has a
 * cell on, every node named, and the read model's state. No read here: `mesh status` and the
 * view's first paint call the reads, then these.
 */
import {
  ALL_NODES,
  parseTargetModuleKey,
  type Difference,
  type ModuleWide,
  type NodeKeys,
  type Summary,
} from "@mesh/protocol";
import type { FleetState } from "./state.js";

/** What a read by key starts from: the summary, the module-wide buckets, the node names. */
export interface FleetShape {
  readonly summary: Summary;
  readonly wide: ModuleWide;
  /** Every node with a presence, sorted. */
  readonly present: readonly string[];
  /** Each module's cells ({@link cellsByModule}). */
  readonly byModule: ReadonlyMap<string, readonly string[]>;
}

/**
 * The nodes each module has a cell on, as the read model places them (a node's own assignment,
 * `all` on every node present), with the cells the summary says are leaving; by module, sorted.
 */
export function cellsByModule(
  wide: Pick<ModuleWide, "assignments">,
  nodes: readonly string[],
  leaving: Summary["leaving"]["first"],
): Map<string, readonly string[]> {
  const extra = new Map<string, Set<string>>();
  const everywhere = new Set<string>();
  const add = (module: string, node: string): void => {
    const set = extra.get(module) ?? new Set<string>();
    set.add(node);
    extra.set(module, set);
  };
  for (const key of wide.assignments.keys()) {
    const parsed = safeTarget(key);
    if (parsed === undefined) continue;
    if ("node" in parsed.target) add(parsed.module, parsed.target.node);
    else everywhere.add(parsed.module);
  }
  for (const { node, module } of leaving) add(module, node);
  const out = new Map<string, readonly string[]>();
  const known = new Set(nodes);
  for (const module of [...new Set([...everywhere, ...extra.keys()])].sort()) {
    const more = [...(extra.get(module) ?? [])].filter((n) => n !== ALL_NODES);
    if (!everywhere.has(module)) out.set(module, more.sort());
    else {
      // The same list for every module placed everywhere, not a copy each.
      const beyond = more.filter((n) => !known.has(n));
      out.set(module, beyond.length === 0 ? nodes : [...nodes, ...beyond].sort());
    }
  }
  return out;
}

/** Every node named: those with a presence, and those only an assignment or a leaving cell names. */
export function allNodesOf(
  present: readonly string[],
  byModule: ReadonlyMap<string, readonly string[]>,
): string[] {
  const known = new Set(present);
  const more = new Set<string>();
  for (const nodes of byModule.values()) {
    if (nodes === present) continue;
    for (const node of nodes) if (!known.has(node)) more.add(node);
  }
  return more.size === 0 ? [...present] : [...present, ...more].sort();
}

/** Every difference, when the summary carries them all (else undefined: each is read by key). */
export function differencesIfWhole(summary: Summary): Map<string, Difference> | undefined {
  const { total, first } = summary.differences;
  return first.length < total ? undefined : new Map(first.map((d) => [d.key, d.difference]));
}

/** The read model's state from what was read: the module-wide buckets whole, some nodes' keys. */
export function fleetStateOf(wide: ModuleWide, keys: NodeKeys, now: number): FleetState {
  return {
    now,
    presence: keys.presence,
    assignments: wide.assignments,
    registrations: wide.registrations,
    builds: wide.builds,
    wants: keys.wants,
    have: keys.have,
    differences: keys.differences,
    compositions: keys.compositions,
    asks: wide.asks,
    answers: wide.answers,
    conditions: wide.conditions,
  };
}

function safeTarget(key: string): ReturnType<typeof parseTargetModuleKey> | undefined {
  try {
    return parseTargetModuleKey(key);
  } catch {
    return undefined;
  }
}
