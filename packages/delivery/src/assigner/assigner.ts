/**
 * The assigner as a process (docs/design.md "Delivery"): a thin shell around core's
 * `assign`, built as a reconciler keyed by node whose passes take a burst of nodes at once
 * (`reconcileBurst`: one snapshot, one `assign` over every node the burst touched). It watches
 * every bucket a pass reads and keeps what they hand in memory; it makes its first pass once every
 * watch has handed what stands (the puts too, when their bucket opens: a pass never writes a want
 * that a standing put contradicts), then one pass per burst of changes (a change that comes during
 * a pass makes one more), and holds no timer. A pass decides only the nodes the changes touched,
 * and writes only what differs from what stands.
 *
 * Every bucket is essential but the puts: without one of them a pass would write wants from half
 * the mesh, so the start stops with the bucket and the grant named. Without the puts the wants are
 * still written, and a later pass opens the puts again, at most once a minute.
 */
import { setMaxListeners } from "node:events";
import {
  ASSIGNER_WRITES,
  assign,
  canonicalJson,
  type AssignerSnapshot,
  type AssignerWrite,
  type FleetState,
  type HaveRecord,
} from "@mesh/core";
import {
  KvBucket,
  keepSayingKeeps,
  reconciler,
  sayCondition,
  conditionsSource,
  type MeshBus,
  type Mirror,
  type MirrorSource,
  type ReconcileBurstContext,
  type Reconciler,
  type SourceChange,
} from "@mesh/bus";
import {
  aborted,
  type BackoffPolicy,
  type Daemon,
  type Lifecycle,
  type RunOptions,
} from "@mesh/kit";
import { Bucket, Stream, type Condition, type Have, type Presence } from "@mesh/protocol";
import {
  CurrentHave,
  foldHave,
  heartbeatOnly,
  mapOf,
  newMaps,
  notHeard,
  ownMapOf,
  summarySource,
  type Maps,
} from "./maps.js";
import { readOwnConditions } from "./own-conditions.js";
import { gatedNodes, nodeOf, writePhase } from "./rollout-gates.js";
import { SummaryKeeper } from "./summary-keeper.js";
import { ALL, TouchedNodes, type Touched } from "./touched-nodes.js";

/** What the assigner keeps, said on the bus so readers can be granted (all readable). */
export const ASSIGNER_KEEPS = [
  { name: "asks", readable: true },
  { name: "compositions", readable: true },
  { name: "differences", readable: true },
  { name: "wants", readable: true },
  { name: "rollouts", readable: true },
] as const;

/** The buckets a pass reads; all but the puts are essential. */
const WATCHED = [
  Bucket.modules,
  Bucket.assignments,
  Bucket.presence,
  Bucket.candidates,
  Bucket.builds,
  Bucket.manifests,
  Bucket.have,
  Bucket.retries,
  Bucket.answers,
  Bucket.composed,
  Bucket.rolloutPolicies,
  Bucket.rolloutSteers,
  Bucket.configRollouts,
  // What it writes: a pass starts from what stands there.
  ...ASSIGNER_WRITES,
] as const;

export interface AssignerOptions {
  readonly bus: MeshBus;
  /**
   * How often, at most, a pass tries again a bucket it can do without while it is not open (the
   * puts, the conditions stream): only a pass started by a change tries, so a bucket the
   * assigner is not granted costs the bus one try a minute at most (default a minute).
   */
  readonly putsReopenIntervalMs?: number;
  readonly log?: (line: string) => void;
  /** Told after each pass; for tests and progress. */
  readonly onPass?: (pass: PassReport) => void;
  /** How many writes are in flight at once. */
  readonly writeConcurrency?: number;
  /** The least time between two computations of the fleet's summary (ms; default 1 s). */
  readonly summaryIntervalMs?: number;
}

export interface PassReport {
  readonly number: number;
  readonly full: boolean;
  readonly nodes: number;
  readonly writes: number;
  readonly puts: boolean;
  readonly ms: number;
}

/** Every bucket it opens; its grant reads exactly these (assigner-grant.test.ts, seed 003). */
export const ASSIGNER_BUCKETS: readonly string[] = [...WATCHED, Bucket.puts, Bucket.summary];

/** The sources it can do without: tried again by passes only. */
const OPTIONAL = [Bucket.puts, Stream.conditions] as const;

/** How often, at most, a pass tries again an optional source that is not open (seed 003: a minute). */
export const PUTS_REOPEN_MS = 60_000;

type AssignerSources = Record<string, MirrorSource<unknown, unknown>>;
type AssignerMirror = Mirror<AssignerSources>;
/** What the assigner reconciles: a node, or every node (the first pass; a change that reaches all). */
type AssignerKey = string | typeof ALL;

/** The reconciler's per-key backoff; never used: a pass that throws fails the run (`failOnError`). */
const PASS_RETRY: BackoffPolicy = { initialMs: 1_000, maxMs: 60_000 };

export class Assigner implements Daemon, AsyncDisposable {
  #passes = 0;
  readonly #bus: MeshBus;
  readonly #options: AssignerOptions;
  readonly #log: (line: string) => void;
  readonly #maps: Maps;
  readonly #buckets: Map<string, KvBucket<unknown>>;
  readonly #reconciler: Reconciler<AssignerSources, AssignerKey>;
  /** Which nodes a change touches (and the nodes each module has keys for). */
  readonly #touched: TouchedNodes;
  #stop = new AbortController();
  /** Every module's latest conditions, by `<module>.<name>`: the summary's read model reads them. */
  readonly #conditions = new Map<string, Condition>();
  #summary: SummaryKeeper | undefined;
  /** The nodes a rollout waits on: each heartbeat of theirs wakes a pass (decision 0130). */
  #gated = new Set<string>();
  /** The have records' latest reports, as the summary reads them. */
  readonly #have: CurrentHave;
  /** When each source it can do without was last tried (the mirror tries both at its start). */
  readonly #triedAt = new Map<string, number>();

  private constructor(options: AssignerOptions, buckets: Map<string, KvBucket<unknown>>) {
    this.#bus = options.bus;
    this.#options = options;
    this.#log = options.log ?? (() => undefined);
    this.#maps = newMaps();
    this.#have = new CurrentHave(this.#maps.have);
    this.#touched = new TouchedNodes(this.#maps);
    this.#buckets = buckets;
    this.#reconciler = reconciler<AssignerSources, AssignerKey>({
      sources: this.#sources(),
      log: this.#log,
      retry: PASS_RETRY,
      // A pass that throws (a bug: a pass catches what the bus refuses) stops the assigner, as it
      // always did; its supervisor starts it again. It holds no timer, not even a retry's.
      failOnError: true,
      // A bucket lost for good (not watched again within a minute), or never heard, stops the
      // assigner rather than let it decide from what it does not hear; its supervisor starts it again.
      failure: notHeard,
      onChange: (change) => this.#heard(change),
      keysOf: (change) => this.#keysOf(change),
      // The first pass decides every node, once every bucket handed what stands.
      allKeys: () => [ALL],
      onReady: (_mirror, { signal }) => this.#ready(signal),
      reconcileBurst: (keys, context) => this.#burst(keys, context),
    });
  }

  /** Opens nothing yet: `run` opens the buckets, so a missing one stops the run, not the creation. */
  static async create(options: AssignerOptions): Promise<Assigner> {
    const buckets = new Map<string, KvBucket<unknown>>();
    for (const bucket of [...WATCHED, Bucket.puts]) {
      buckets.set(bucket, await KvBucket.open(options.bus, bucket));
    }
    const assigner = new Assigner(options, buckets);
    assigner.#summary = new SummaryKeeper({
      bucket: await KvBucket.open(options.bus, Bucket.summary),
      state: () => assigner.#fleetState(),
      log: assigner.#log,
      ...(options.summaryIntervalMs === undefined
        ? {}
        : { minIntervalMs: options.summaryIntervalMs }),
    });
    return assigner;
  }

  /** The fleet's state as the read model reads it, from what the assigner holds. */
  #fleetState(): FleetState {
    const m = this.#maps;
    return {
      now: Date.now(),
      presence: m.presence,
      assignments: m.assignments,
      registrations: m.registrations,
      builds: m.builds,
      wants: m.own.wants,
      have: this.#have,
      differences: m.own.differences,
      compositions: m.own.compositions,
      asks: m.own.asks,
      answers: m.answers,
      conditions: [...this.#conditions.values()],
    };
  }

  get state(): Lifecycle {
    return this.#reconciler.state;
  }

  /** How many passes have been made. */
  get passes(): number {
    return this.#passes;
  }

  run(options: RunOptions): Promise<void> {
    const signal = AbortSignal.any([options.signal, this.#stop.signal]);
    const now = Date.now();
    for (const source of OPTIONAL) this.#triedAt.set(source, now);
    return this.#reconciler.run({ signal });
  }

  /** Stops a running `run()`; disposing twice is harmless. */
  [Symbol.asyncDispose](): Promise<void> {
    this.#stop.abort();
    return Promise.resolve();
  }

  /** Every bucket handed what stands: what it said before is read back, then the first pass. */
  async #ready(signal: AbortSignal): Promise<void> {
    // Up to writeConcurrency writes listen on the signal at once, by design.
    setMaxListeners(0, signal);
    await readOwnConditions(this.#bus, this.#maps.own.conditions, { signal, log: this.#log });
    keepSayingKeeps(this.#bus, ASSIGNER_KEEPS, {
      signal,
      onError: (e) =>
        this.#log(
          `what the assigner keeps could not be said yet (${e.message}); said again on reconnect`,
        ),
    });
    this.#log("every watch handed what stands");
    this.#summary?.run(signal).catch((e: unknown) => {
      this.#log(`the fleet's summary stopped: ${(e as Error).message}`);
    });
  }

  /** One pass over a burst of nodes (every node on the first). */
  async #burst(
    keys: AssignerKey[],
    { mirror, signal, more }: ReconcileBurstContext<AssignerSources, AssignerKey>,
  ): Promise<void> {
    const full = this.#passes === 0;
    // Before the pass decides, so what a reopened bucket hands is decided in this very pass.
    if (!full) {
      await this.#reopenOptional(mirror, signal);
      more();
    }
    await this.#pass(full || keys.includes(ALL), keys, mirror, signal);
  }

  /** One pass over the touched nodes (every node when `all`), writing what changed. */
  async #pass(
    all: boolean,
    keys: readonly AssignerKey[],
    mirror: AssignerMirror,
    signal: AbortSignal,
  ): Promise<void> {
    const started = performance.now();
    const nodes = keys.filter((key): key is string => key !== ALL);
    const snapshot: AssignerSnapshot = { ...this.#maps, now: new Date().toISOString() };
    const result = assign(snapshot, all ? {} : { nodes });
    // Records first (a later pass continues from them), then the rest (see writePhase).
    const phased = (phase: number) => result.writes.filter((w) => writePhase(w) === phase);
    for (const phase of [0, 1, 2]) await this.#write(phased(phase), signal);
    this.#gated = gatedNodes([...result.rollouts.values(), ...result.configRollouts.values()]);
    // Its own writes are held before they are written, so their echoes move nothing: say so here.
    if (result.writes.length > 0) {
      this.#summary?.moved(
        result.writes.flatMap((w) => {
          const source = summarySource(w.bucket);
          return source === undefined ? [] : [{ source, key: w.key }];
        }),
      );
    }
    for (const c of result.conditions) {
      try {
        // As the credential's module: `mesh-assigner` run by a host (decision 0190), or the
        // principal `assigner` of `mesh assigner --credential`; each may say only its own.
        await sayCondition(this.#bus, { ...c, module: this.#bus.credential.module }, { signal });
        // Held as said, so a later pass resolves it once its cause ends (or not again).
        if (c.resolved === true) this.#maps.own.conditions.delete(c.name);
        else if (c.node !== undefined) this.#maps.own.conditions.set(c.name, { node: c.node });
      } catch (e) {
        this.#log(`a condition could not be said (${(e as Error).message}): ${c.message}`);
      }
    }
    this.#passes += 1;
    const report: PassReport = {
      number: this.#passes,
      full: all,
      nodes: result.nodes.length,
      writes: result.writes.length,
      puts: mirror.isOpen(Bucket.puts),
      ms: performance.now() - started,
    };
    this.#log(
      `pass ${report.number}: ${report.full ? "every node" : `${report.nodes} node(s)`}, ${report.writes} write(s) in ${Math.round(report.ms)} ms`,
    );
    this.#options.onPass?.(report);
  }

  /**
   * The sources it can do without that are not open, tried again by a pass a change started, each
   * at most once every `putsReopenIntervalMs`: a try costs the bus a request, and no clock makes
   * one (seed 003). A source that opens hands what stands before the pass decides.
   */
  async #reopenOptional(mirror: AssignerMirror, signal: AbortSignal): Promise<void> {
    const every = this.#options.putsReopenIntervalMs ?? PUTS_REOPEN_MS;
    for (const source of OPTIONAL) {
      if (mirror.isOpen(source) || signal.aborted) continue;
      const now = Date.now();
      if (now - (this.#triedAt.get(source) ?? 0) < every) continue;
      this.#triedAt.set(source, now);
      if (await Promise.race([mirror.reopen(source), aborted(signal).then(() => false)])) {
        this.#log(
          `the bucket ${source} is open: ${source === Bucket.puts ? "puts are taken" : "conditions are counted"}`,
        );
      }
    }
  }

  async #write(writes: readonly AssignerWrite[], signal: AbortSignal): Promise<void> {
    const limit = this.#options.writeConcurrency ?? 256;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < writes.length && !signal.aborted) {
        const w = writes[next++] as AssignerWrite;
        const bucket = this.#buckets.get(w.bucket) as KvBucket<unknown>;
        const own = ownMapOf(this.#maps, w.bucket);
        const held = own.get(w.key);
        // Held before it is written, so the watch's echo of this write (which may come before
        // the write's own answer) is no change and makes no pass.
        if (w.value === undefined) own.delete(w.key);
        else own.set(w.key, w.value);
        try {
          if (w.value === undefined) await bucket.delete(w.key, { signal });
          else await bucket.put(w.key, w.value, { signal });
        } catch (error) {
          // Held as it was: the next pass finds it still differs and writes it again.
          if (held === undefined) own.delete(w.key);
          else own.set(w.key, held);
          this.#log(`writing ${w.bucket} ${w.key} failed: ${(error as Error).message}`);
          this.#enqueue(this.#touched.of(w.bucket, w.key));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, writes.length) }, worker));
  }

  /** Every bucket a pass reads, kept in the assigner's own maps. */
  #sources(): AssignerSources {
    const equal = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
    const sources: Record<string, MirrorSource<unknown, unknown>> = {};
    for (const bucket of [...WATCHED, Bucket.puts]) {
      if (bucket === Bucket.have) continue;
      sources[bucket] = {
        bucket: this.#buckets.get(bucket) as KvBucket<unknown>,
        into: mapOf(this.#maps, bucket),
        equal,
      };
    }
    sources[Bucket.have] = {
      bucket: this.#buckets.get(Bucket.have) as KvBucket<unknown>,
      into: this.#maps.have,
      include: "history",
      fold: (record, have, revision) =>
        foldHave(record as HaveRecord | undefined, have as Have | undefined, revision),
      // A node's report is news even when it repeats itself: its history grew.
      equal: () => false,
    };
    // Tried again only by a pass (#reopenOptional), never by a clock.
    sources[Bucket.puts] = {
      ...(sources[Bucket.puts] as MirrorSource<unknown, unknown>),
      optional: true,
      reopen: "when-asked",
    };
    // Every module's conditions, for the summary only: no pass reads them. A grant from before
    // the summary may not read them; the summary is then kept without them.
    sources[Stream.conditions] = {
      bucket: conditionsSource(this.#bus),
      into: this.#conditions,
      optional: true,
      reopen: "when-asked",
    };
    return sources;
  }

  /**
   * What every change tells the assigner's indexes, also before the first pass: the nodes each
   * module has keys for, and the summary (told of a heartbeat, which no pass reads, too: it
   * judges gone by it, and recomputes only when the heartbeat can change a judgement).
   */
  #heard(change: SourceChange<AssignerSources>): void {
    if (change.source === Bucket.presence && heartbeatOnly(change.before, change.after)) {
      this.#summary?.heartbeat(change.key, change.before as Presence);
      return;
    }
    const read = summarySource(change.source);
    if (read !== undefined) this.#summary?.moved([{ source: read, key: change.key }]);
    if (change.source !== Stream.conditions) this.#touched.index(change.source, change.key);
  }

  /** The nodes a change (once the first pass is due) wakes a pass for. */
  #keysOf(change: SourceChange<AssignerSources>): Iterable<AssignerKey> {
    // A heartbeat moves only the presence's time, which no rule but a rollout's gate reads: it
    // wakes a pass for a node a rollout waits on, and no other (decision 0130).
    if (change.source === Bucket.presence && heartbeatOnly(change.before, change.after)) {
      const node = nodeOf(change.after);
      return this.#gated.has(node) ? [node] : [];
    }
    if (change.source === Stream.conditions) return [];
    return this.#keys(this.#touched.of(change.source, change.key));
  }

  #keys(touched: Touched): Iterable<AssignerKey> {
    return touched === ALL ? [ALL] : touched;
  }

  /** Asks for another pass over what a write that failed touched. */
  #enqueue(touched: Touched): void {
    for (const key of this.#keys(touched)) this.#reconciler.enqueue(key);
  }
}
