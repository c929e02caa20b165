/**
 * The fleet read by key, not by whole bucket (decision 0090), its reads: the assigner's summary in
 * one get, the buckets that grow with modules (registrations, assignments, builds, puts, asks,
 * answers) and the conditions whole, the node names as a list of presence keys, and then only the
 * keys of the nodes and cells a page shows, by direct gets. What `mesh status` and the view's
 * first paint read; what the reads mean (each module's cells, the read model's state) is core's
 * `fleet/by-key.ts`.
 */
import {
  Bucket,
  ErrorCode,
  MeshError,
  SUMMARY_KEY,
  nodeModuleKey,
  type CompositionVerdict,
  type Difference,
  type Have,
  type ModuleWide,
  type NodeKeys,
  type Presence,
  type Summary,
  type Want,
} from "@mesh/protocol";
import { KvBucket } from "./kv-bucket.js";
import type { MeshBus } from "./mesh-bus.js";
import { conditionsSource, readStanding } from "./mirror/sources.js";

/** How many gets are in flight at once. */
const GETS_AT_ONCE = 256;

/** The assigner's summary, or undefined when none was written (an older assigner, a new mesh). */
export async function readSummary(
  bus: MeshBus,
  signal?: AbortSignal,
): Promise<Summary | undefined> {
  const bucket = await KvBucket.open(bus, Bucket.summary);
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
    KvBucket.open(bus, bucket).then((b) => readStanding(b, { signal }));
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
  const presence = await KvBucket.open(bus, Bucket.presence);
  const options = signal === undefined ? {} : { signal };
  if (heard !== undefined) {
    const held = await presence.keysHeld(options).catch(() => undefined);
    if (held?.length === heard) return held;
  }
  return presence.keys(">", options);
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
  const open = <B extends Bucket>(b: B) => KvBucket.open(bus, b);
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
