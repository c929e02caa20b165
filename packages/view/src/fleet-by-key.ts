/**
 * The fleet read by key, not by whole bucket (decision 0090): the assigner's summary in one get,
 * the buckets that grow with modules (registrations, assignments, builds, puts, asks, answers) and
 * the conditions whole, the node names as a list of presence keys, and then only the keys of the
 * nodes and cells a page shows, by direct gets. What `mesh status` and the view's first paint read;
 * each cell's state and reason is still core's read model, given the keys of its node.
 */
import type { KvBucket, MeshBus } from "@mesh/bus";
import { KvBucket as Kv, conditionsSource, readStanding } from "@mesh/bus";
import type { FleetState } from "@mesh/core";
import {
  ALL_NODES,
  Bucket,
  ErrorCode,
  MeshError,
  SUMMARY_KEY,
  nodeModuleKey,
  parseTargetModuleKey,
  type CompositionVerdict,
  type Difference,
  type Have,
  type Presence,
  type Put,
  type Summary,
  type Want,
} from "@mesh/protocol";

/** The buckets that grow with the modules, not the nodes, read whole (the read model's, and puts). */
export type ModuleWide = Pick<
  FleetState,
  "registrations" | "assignments" | "builds" | "asks" | "answers" | "conditions"
> & { readonly puts: ReadonlyMap<string, Put> };

/** The keys of some nodes and cells, as a page reads them: the rest of the read model's state. */
export type NodeKeys = Pick<
  FleetState,
  "presence" | "compositions" | "wants" | "have" | "differences"
>;

/** What a read by key starts from: the summary, the module-wide buckets, the node names. */
export interface FleetShape {
  readonly summary: Summary;
  readonly wide: ModuleWide;
  /** Every node with a presence, sorted. */
  readonly present: readonly string[];
  /** Each module's cells ({@link cellsByModule}). */
  readonly byModule: ReadonlyMap<string, readonly string[]>;
}

/** How many gets are in flight at once. */
const GETS_AT_ONCE = 256;

/** The assigner's summary, or undefined when none was written (an older assigner, a new mesh). */
export async function readSummary(
  bus: MeshBus,
  signal?: AbortSignal,
): Promise<Summary | undefined> {
  const bucket = await Kv.open(bus, Bucket.summary);
  try {
    return (await bucket.get(SUMMARY_KEY, signal === undefined ? {} : { signal }))?.value;
  } catch (error) {
    // A bus from before the summary has no such bucket: as good as no summary.
    if (error instanceof MeshError && error.code === ErrorCode.NOT_FOUND) return undefined;
    throw error;
  }
}

/** The module-wide buckets and the conditions, each read whole at once. */
export async function readModuleWide(bus: MeshBus, signal?: AbortSignal): Promise<ModuleWide> {
  const whole = <B extends Bucket>(bucket: B) =>
    Kv.open(bus, bucket).then((b) => readStanding(b, { signal }));
  const [registrations, assignments, builds, puts, asks, answers, conditions] = await Promise.all([
    whole(Bucket.modules),
    whole(Bucket.assignments),
    whole(Bucket.builds),
    whole(Bucket.puts),
    whole(Bucket.asks),
    whole(Bucket.answers),
    readStanding(conditionsSource(bus), { signal }),
  ]);
  return {
    registrations,
    assignments,
    builds,
    puts,
    asks,
    answers,
    conditions: [...conditions.values()],
  };
}

/**
 * The fleet's shape, read by key: the summary first (the module-wide reads start beside its get),
 * then, for a fleet of more than `above` cells, the node names and each module's cells. Else
 * `cells`, the summary's count (a fleet small enough to read whole), or `none` (no summary yet).
 */
export async function readShape(
  bus: MeshBus,
  options: { readonly above: number; readonly signal?: AbortSignal | undefined },
): Promise<FleetShape | { readonly cells: number } | "none"> {
  const { signal } = options;
  const reading = readModuleWide(bus, signal);
  reading.catch(() => undefined);
  const summary = await readSummary(bus, signal);
  if (summary === undefined) return "none";
  const cells = summary.cells.assigned + summary.cells.leaving;
  if (cells <= options.above) return { cells };
  const heard = summary.nodes.present + summary.nodes.gone;
  const [wide, present] = await Promise.all([reading, listNodes(bus, signal, heard)]);
  return { summary, wide, present, byModule: cellsByModule(wide, present, summary.leaving.first) };
}

/**
 * Every node that has a presence, sorted: a list of keys, no values. `heard`, the summary's count
 * of nodes ever present, lets it take the stream's subjects in one request (a deleted key's
 * marker stays among them, so only when the count agrees); else the keys are listed one message
 * each.
 */
export async function listNodes(
  bus: MeshBus,
  signal?: AbortSignal,
  heard?: number,
): Promise<string[]> {
  const presence = await Kv.open(bus, Bucket.presence);
  const options = signal === undefined ? {} : { signal };
  if (heard !== undefined) {
    const held = await presence.keysHeld(options).catch(() => undefined);
    if (held?.length === heard) return held;
  }
  return presence.keys(">", options);
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

/**
 * The keys of these nodes (presence; composition, of `compositions` when given) and cells (want,
 * have, difference), by gets. `differences`, when the summary carries every one, is used instead of
 * asking for each cell's.
 */
export async function readNodeKeys(
  bus: MeshBus,
  options: {
    readonly nodes: Iterable<string>;
    readonly compositions?: Iterable<string>;
    readonly cells: Iterable<{ readonly node: string; readonly module: string }>;
    readonly differences?: ReadonlyMap<string, Difference>;
    readonly signal?: AbortSignal;
  },
): Promise<NodeKeys> {
  const open = <B extends Bucket>(b: B) => Kv.open(bus, b);
  const [presence, compositions, wants, have, differences] = await Promise.all([
    open(Bucket.presence),
    open(Bucket.compositions),
    open(Bucket.wants),
    open(Bucket.have),
    open(Bucket.differences),
  ]);
  const nodes = [...new Set(options.nodes)];
  const cells = [...new Set([...options.cells].map((c) => nodeModuleKey(c.node, c.module)))];
  const out = {
    presence: new Map<string, Presence>(),
    compositions: new Map<string, CompositionVerdict>(),
    wants: new Map<string, Want>(),
    have: new Map<string, Have>(),
    differences: new Map<string, Difference>(),
  };
  const gets: Array<() => Promise<void>> = [];
  const get = <T>(bucket: KvBucket<T>, key: string, into: Map<string, T>) =>
    gets.push(async () => {
      const entry = await bucket.get(
        key,
        options.signal === undefined ? {} : { signal: options.signal },
      );
      if (entry !== undefined) into.set(key, entry.value);
    });
  for (const node of nodes) get(presence, node, out.presence);
  for (const node of new Set(options.compositions ?? nodes))
    get(compositions, node, out.compositions);
  for (const key of cells) {
    get(wants, key, out.wants);
    get(have, key, out.have);
    const known = options.differences;
    if (known === undefined) get(differences, key, out.differences);
    else if (known.has(key)) out.differences.set(key, known.get(key) as Difference);
  }
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < gets.length) await (gets[next++] as () => Promise<void>)();
  };
  await Promise.all(Array.from({ length: Math.min(GETS_AT_ONCE, gets.length) }, worker));
  return out;
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
