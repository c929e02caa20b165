/**
 * The assigner as a process (docs/design.md "Delivery"): a thin shell around core's
 * `assign`. It watches every bucket a pass reads and keeps what they hand in memory; it makes its
 * first pass once every watch has handed what stands (the puts too, when their bucket opens: a
 * pass never writes a want that a standing put contradicts), then one pass per burst of changes (a change
 * that comes during a pass makes one more), and holds no timer. A pass decides only the nodes the
 * changes touched, and writes only what differs from what stands.
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
  ALL,
  KvBucket,
  Mirror,
  keepSayingKeeps,
  sayCondition,
  conditionsSource,
  type MeshBus,
  type MirrorSource,
  type Touched,
} from "@mesh/bus";
import { DaemonLife, Lifecycle, aborted, type Daemon, type RunOptions } from "@mesh/kit";
import {
  ALL_NODES,
  Bucket,
  Principal,
  Stream,
  type Ask,
  type Condition,
  type Have,
  type Presence,
} from "@mesh/protocol";
import {
  CurrentHave,
  allKey,
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
import { gatedNodes, nodeOf } from "./rollout-gates.js";
import { SummaryKeeper } from "./summary-keeper.js";

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

type AssignerMirror = Mirror<Record<string, MirrorSource<unknown, unknown>>>;

export class Assigner implements Daemon, AsyncDisposable {
  readonly #life: DaemonLife;
  #passes = 0;
  readonly #bus: MeshBus;
  readonly #options: AssignerOptions;
  readonly #log: (line: string) => void;
  readonly #maps: Maps;
  readonly #buckets = new Map<string, KvBucket<unknown>>();
  /** The buckets in memory; the nodes their changes touched are its dirty keys. */
  #mirror: AssignerMirror | undefined;
  /** Nodes each module has keys for, so a module's change touches only those nodes. */
  readonly #moduleNodes = new Map<string, Set<string>>();
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

  private constructor(options: AssignerOptions) {
    this.#bus = options.bus;
    this.#options = options;
    this.#log = options.log ?? (() => undefined);
    this.#life = new DaemonLife({ log: this.#log });
    this.#maps = newMaps();
    this.#have = new CurrentHave(this.#maps.have);
  }

  /** Opens nothing yet: `run` opens the buckets, so a missing one stops the run, not the creation. */
  static async create(options: AssignerOptions): Promise<Assigner> {
    const assigner = new Assigner(options);
    for (const bucket of [...WATCHED, Bucket.puts]) {
      assigner.#buckets.set(bucket, await KvBucket.open(options.bus, bucket));
    }
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
    return this.#life.state;
  }

  /** How many passes have been made. */
  get passes(): number {
    return this.#passes;
  }

  run(options: RunOptions): Promise<void> {
    const signal = AbortSignal.any([options.signal, this.#stop.signal]);
    // Up to writeConcurrency writes listen on the signal at once, by design.
    setMaxListeners(0, signal);
    return this.#life.run({ signal }, (signal) => this.#work(signal));
  }

  async #work(signal: AbortSignal): Promise<void> {
    const mirror = this.#startMirror();
    this.#mirror = mirror;
    try {
      // The first pass waits for every bucket to hand what stands, the puts too when their
      // bucket opens: no first pass (after a restart, say) writes a want a standing put
      // contradicts; a puts bucket that cannot be opened holds nothing back.
      const stopped = aborted(signal);
      await Promise.race([
        mirror.ready.catch((e: unknown) => Promise.reject(notHeard(e))),
        stopped,
      ]);
      if (signal.aborted) return;
      await readOwnConditions(this.#bus, this.#maps.own.conditions, { signal, log: this.#log });
      keepSayingKeeps(this.#bus, ASSIGNER_KEEPS, {
        signal,
        onError: (e) =>
          this.#log(
            `what the assigner keeps could not be said yet (${e.message}); said again on reconnect`,
          ),
      });
      this.#life.set(Lifecycle.running, "every watch handed what stands");
      this.#summary?.run(signal).catch((e: unknown) => {
        this.#log(`the fleet's summary stopped: ${(e as Error).message}`);
      });
      // A bucket lost for good (not watched again within a minute) stops the assigner rather
      // than let it decide from what it no longer hears; its supervisor starts it again.
      const failed = mirror.failed.catch((e: unknown) => Promise.reject(notHeard(e)));
      failed.catch(() => undefined);
      let full = true;
      for (;;) {
        if (signal.aborted) break;
        if (!full) {
          await Promise.race([mirror.changed(signal), failed]);
          if (signal.aborted) break;
        }
        await this.#pass(full, signal);
        full = false;
      }
    } finally {
      // Every watch is stopped before the connection may close under it.
      await mirror[Symbol.asyncDispose]();
    }
  }

  /** Stops a running `run()`; disposing twice is harmless. */
  [Symbol.asyncDispose](): Promise<void> {
    this.#stop.abort();
    return Promise.resolve();
  }

  /** One pass over the touched nodes (every node on the first), writing what changed. */
  async #pass(full: boolean, signal: AbortSignal): Promise<void> {
    const started = performance.now();
    const mirror = this.#mirror as AssignerMirror;
    // Before the dirty keys are taken, so what a reopened bucket hands is decided in this pass.
    if (!full) await this.#reopenOptional(mirror, signal);
    const dirty = mirror.take();
    const touchedAll = full || dirty.all;
    const nodes = [...dirty.keys];
    const snapshot: AssignerSnapshot = { ...this.#maps, now: new Date().toISOString() };
    const result = assign(snapshot, touchedAll ? {} : { nodes });
    // A rollout's record first: a later pass continues from it, whatever came of the wants.
    const first = (w: AssignerWrite): boolean => w.bucket === Bucket.rollouts;
    await this.#write(result.writes.filter(first), signal);
    await this.#write(
      result.writes.filter((w) => !first(w)),
      signal,
    );
    this.#gated = gatedNodes(result.rollouts.values());
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
        await sayCondition(this.#bus, { ...c, module: Principal.assigner }, { signal });
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
      full: touchedAll,
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
          this.#mirror?.touch(this.#touchedBy(w.bucket, w.key));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, writes.length) }, worker));
  }

  /** The mirror of every bucket a pass reads, kept in the assigner's own maps. */
  #startMirror(): AssignerMirror {
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
    const now = Date.now();
    for (const source of OPTIONAL) this.#triedAt.set(source, now);
    return Mirror.start({
      sources,
      touched: (change) => {
        // A heartbeat moves only the presence's time, which no rule but a rollout's gate reads:
        // it logs no line. The summary judges gone by it, so it is told (it recomputes only
        // when the heartbeat can change a judgement).
        if (change.source === Bucket.presence && heartbeatOnly(change.before, change.after)) {
          this.#summary?.heartbeat(change.key, change.before as Presence);
          // Only a rollout's gate reads a heartbeat: it wakes a pass for a node a rollout waits
          // on, and no other (decision 0130).
          const node = nodeOf(change.after);
          return this.#mirror?.isReady === true && this.#gated.has(node) ? [node] : [];
        }
        const read = summarySource(change.source);
        if (read !== undefined) this.#summary?.moved([{ source: read, key: change.key }]);
        if (change.source === Stream.conditions) return [];
        this.#index(change.source, change.key);
        // Before the first pass nothing needs noting: it decides every node.
        return this.#mirror?.isReady === true ? this.#touchedBy(change.source, change.key) : [];
      },
      log: this.#log,
    });
  }

  #index(bucket: string, key: string): void {
    if (
      bucket === Bucket.have ||
      bucket === Bucket.wants ||
      bucket === Bucket.assignments ||
      bucket === Bucket.puts ||
      bucket === Bucket.retries ||
      bucket === Bucket.differences
    ) {
      const [node, module] = key.split(".") as [string, string | undefined];
      if (module === undefined || node === ALL_NODES) return;
      const set = this.#moduleNodes.get(module) ?? new Set<string>();
      set.add(node);
      this.#moduleNodes.set(module, set);
    }
  }

  /** The nodes one change touches: its own node, or every node a module's change reaches. */
  #touchedBy(bucket: string, key: string): Touched {
    const nodes = new Set<string>();
    let all = false;
    const touchModule = (module: string): void => {
      const allKeyOf = allKey(module);
      if (
        allKeyOf === undefined ||
        this.#maps.assignments.has(allKeyOf) ||
        this.#maps.puts.has(allKeyOf)
      ) {
        all = true;
        return;
      }
      for (const n of this.#moduleNodes.get(module) ?? []) nodes.add(n);
    };
    const first = key.split(".")[0] as string;
    switch (bucket) {
      case Bucket.presence:
      case Bucket.composed:
      case Bucket.compositions:
      case Bucket.have:
      case Bucket.wants:
      case Bucket.differences:
        nodes.add(first);
        break;
      case Bucket.assignments:
      case Bucket.puts:
      case Bucket.retries:
        if (first === ALL_NODES) all = true;
        else nodes.add(first);
        break;
      case Bucket.modules:
      case Bucket.candidates:
      case Bucket.builds:
      case Bucket.rolloutPolicies:
      case Bucket.rolloutSteers:
      case Bucket.rollouts:
        touchModule(first);
        break;
      case Bucket.manifests:
        for (const b of this.#maps.builds.values())
          if (b.manifestDigest === key) touchModule(b.module);
        break;
      case Bucket.answers:
      case Bucket.asks: {
        const ask: Ask | undefined = this.#maps.own.asks.get(key);
        if (ask === undefined) all = true;
        else touchModule(ask.module);
        break;
      }
      default:
        all = true;
    }
    return all ? ALL : nodes;
  }
}
