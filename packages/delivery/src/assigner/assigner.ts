/**
 * The assigner as a process (DESIGN.md "Delivery", seeds/003): a thin shell around core's
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
  assign,
  canonicalJson,
  type AssignerSnapshot,
  type AssignerWrite,
  type HaveRecord,
} from "@mesh/core";
import { KvBucket, keepSayingKeeps, sayCondition, type MeshBus, type WatchEvent } from "@mesh/bus";
import {
  ALL_NODES,
  Bucket,
  ErrorCode,
  MeshError,
  Principal,
  type Ask,
  type Have,
} from "@mesh/protocol";
import { allKey, mapOf, newMaps, ownMapOf, unavailable, type Maps } from "./maps.js";
import { DaemonState, aborted, type Daemon } from "../daemon.js";

/** What the assigner keeps, said on the bus so readers can be granted (all readable). */
export const ASSIGNER_KEEPS = [
  { name: "asks", readable: true },
  { name: "compositions", readable: true },
  { name: "differences", readable: true },
  { name: "wants", readable: true },
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
  Bucket.wants,
  Bucket.compositions,
  Bucket.differences,
  Bucket.asks,
] as const;

export interface AssignerOptions {
  readonly bus: MeshBus;
  /** How often, at most, a pass tries the puts bucket again while it is not open (default a minute). */
  readonly putsReopenIntervalMs?: number;
  readonly log?: (line: string) => void;
  /** Told after each pass; for tests and progress. */
  readonly onPass?: (pass: PassReport) => void;
  /** How many writes are in flight at once. */
  readonly writeConcurrency?: number;
}

export interface PassReport {
  readonly number: number;
  readonly full: boolean;
  readonly nodes: number;
  readonly writes: number;
  readonly puts: boolean;
  readonly ms: number;
}

export class Assigner implements Daemon, AsyncDisposable {
  #state: DaemonState = DaemonState.starting;
  #passes = 0;
  readonly #bus: MeshBus;
  readonly #options: AssignerOptions;
  readonly #log: (line: string) => void;
  readonly #maps: Maps;
  readonly #buckets = new Map<string, KvBucket<unknown>>();
  /** Nodes the changes since the last pass touched; `all` when a change touches every node. */
  #touched = new Set<string>();
  #touchedAll = false;
  #wake: (() => void) | undefined;
  #dirty = false;
  #putsOpen = false;
  #putsTried = 0;
  /** Nodes each module has keys for, so a module's change touches only those nodes. */
  readonly #moduleNodes = new Map<string, Set<string>>();
  #stop = new AbortController();
  /** Every watch loop, so a stop waits for each watch to be stopped before the bus may close. */
  readonly #loops: Promise<unknown>[] = [];

  private constructor(options: AssignerOptions) {
    this.#bus = options.bus;
    this.#options = options;
    this.#log = options.log ?? (() => undefined);
    this.#maps = newMaps();
  }

  /** Opens nothing yet: `run` opens the buckets, so a missing one stops the run, not the creation. */
  static async create(options: AssignerOptions): Promise<Assigner> {
    const assigner = new Assigner(options);
    for (const bucket of [...WATCHED, Bucket.puts]) {
      assigner.#buckets.set(bucket, await KvBucket.open(options.bus, bucket));
    }
    return assigner;
  }

  get state(): DaemonState {
    return this.#state;
  }

  /** How many passes have been made. */
  get passes(): number {
    return this.#passes;
  }

  async run(options: { signal: AbortSignal }): Promise<void> {
    const signal = AbortSignal.any([options.signal, this.#stop.signal]);
    const watching = new AbortController();
    // Fourteen watches and up to writeConcurrency writes listen on these at once, by design.
    setMaxListeners(0, signal, watching.signal);
    const stopWatching = (): void => watching.abort();
    signal.addEventListener("abort", stopWatching, { once: true });
    const failures: Promise<never>[] = [];
    try {
      // Every watch at once; the first pass waits for each to hand what stands.
      const ready = WATCHED.map((bucket) => {
        const w = this.#watch(bucket, watching.signal);
        failures.push(w.failed);
        return w.ready;
      });
      // The puts are waited for too when their bucket opens, so no first pass (after a restart,
      // say) writes a want a standing put contradicts; a puts bucket that cannot be opened
      // holds nothing back.
      ready.push(this.#openPuts(watching.signal, failures).catch(() => undefined));
      const stopped = aborted(signal);
      await Promise.race([Promise.all(ready), stopped]);
      if (signal.aborted) return;
      keepSayingKeeps(this.#bus, ASSIGNER_KEEPS, {
        signal,
        onError: (e) =>
          this.#log(
            `what the assigner keeps could not be said yet (${e.message}); said again on reconnect`,
          ),
      });
      this.#state = DaemonState.running;
      this.#log("running: every watch handed what stands");
      const failed = Promise.race(failures);
      failed.catch(() => undefined);
      let full = true;
      for (;;) {
        if (signal.aborted) break;
        if (!full && !this.#dirty) {
          const woken = new Promise<void>((resolve) => (this.#wake = resolve));
          await Promise.race([woken, stopped, failed]);
          if (signal.aborted) break;
        }
        this.#dirty = false;
        if (!full) this.#maybeReopenPuts(watching.signal, failures);
        await this.#pass(full, signal);
        full = false;
      }
    } catch (error) {
      this.#state = DaemonState.failed;
      throw error;
    } finally {
      this.#state = this.#state === DaemonState.failed ? DaemonState.failed : DaemonState.stopping;
      signal.removeEventListener("abort", stopWatching);
      watching.abort();
      // A watch still starting when the connection closes leaks the client's heartbeat timer.
      await Promise.allSettled(this.#loops);
      if (this.#state !== DaemonState.failed) this.#state = DaemonState.stopped;
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
    const touchedAll = full || this.#touchedAll;
    const nodes = [...this.#touched];
    this.#touched = new Set();
    this.#touchedAll = false;
    const snapshot: AssignerSnapshot = { ...this.#maps, now: new Date().toISOString() };
    const result = assign(snapshot, touchedAll ? {} : { nodes });
    await this.#write(result.writes, signal);
    for (const c of result.conditions) {
      await sayCondition(this.#bus, { ...c, module: Principal.assigner }, { signal }).catch(
        (e: unknown) => {
          this.#log(`a condition could not be said (${(e as Error).message}): ${c.message}`);
        },
      );
    }
    this.#passes += 1;
    const report: PassReport = {
      number: this.#passes,
      full: touchedAll,
      nodes: result.nodes.length,
      writes: result.writes.length,
      puts: this.#putsOpen,
      ms: performance.now() - started,
    };
    this.#log(
      `pass ${report.number}: ${report.full ? "every node" : `${report.nodes} node(s)`}, ${report.writes} write(s)`,
    );
    this.#options.onPass?.(report);
  }

  async #write(writes: readonly AssignerWrite[], signal: AbortSignal): Promise<void> {
    const limit = this.#options.writeConcurrency ?? 256;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < writes.length && !signal.aborted) {
        const w = writes[next++] as AssignerWrite;
        const bucket = this.#buckets.get(w.bucket) as KvBucket<unknown>;
        const own = ownMapOf(this.#maps, w.bucket);
        try {
          if (w.value === undefined) await bucket.delete(w.key, { signal });
          else await bucket.put(w.key, w.value, { signal });
          // Held at once, so the watch's echo of this write is no change and makes no pass.
          if (w.value === undefined) own.delete(w.key);
          else own.set(w.key, w.value);
        } catch (error) {
          // Not held: the next pass finds it still differs and writes it again.
          this.#log(`writing ${w.bucket} ${w.key} failed: ${(error as Error).message}`);
          this.#touch(w.bucket, w.key);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, writes.length) }, worker));
  }

  /** Starts a watch; `ready` settles at its `current` marker, `failed` rejects if it ends while running. */
  #watch(
    bucket: string,
    signal: AbortSignal,
    optional = false,
  ): { ready: Promise<void>; failed: Promise<never> } {
    let markReady!: () => void;
    let markFailed!: (e: unknown) => void;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      markFailed = reject;
    });
    let isReady = false;
    // An optional watch (the puts) may open while passes run: what it hands before its marker
    // is held back and taken at once, so no pass sees half the puts.
    const held: Array<Exclude<WatchEvent<unknown>, { type: "current" }>> = [];
    const kv = this.#buckets.get(bucket) as KvBucket<unknown>;
    // The loop always ends (with the error that stops the assigner, or none), so `run` can wait
    // for every watch to be stopped before the connection closes under it.
    const loop = (async (): Promise<MeshError | undefined> => {
      try {
        for await (const event of kv.watch({
          signal,
          include: bucket === Bucket.have ? "history" : "last",
        })) {
          if (event.type === "current") {
            // A reopened watch hands what stands now: a put lifted while it was not heard goes.
            if (optional) mapOf(this.#maps, bucket).clear();
            for (const e of held.splice(0)) this.#apply(bucket, e, false);
            isReady = true;
            markReady();
            continue;
          }
          if (optional && !isReady) held.push(event);
          else this.#apply(bucket, event, isReady);
        }
        if (signal.aborted) return undefined;
        throw new MeshError(
          ErrorCode.BUCKET_UNAVAILABLE,
          `the watch of ${bucket} ended; the assigner stops rather than decide from what it no longer hears — start it again`,
        );
      } catch (error) {
        if (signal.aborted) return undefined;
        const mesh = unavailable(bucket, error, optional);
        if (!isReady) markFailed(mesh);
        if (optional) {
          this.#putsOpen = false;
          this.#log(mesh.message);
          return undefined;
        }
        return mesh;
      }
    })();
    this.#loops.push(loop);
    const failed = loop.then((error) =>
      error === undefined ? new Promise<never>(() => undefined) : Promise.reject(error),
    );
    failed.catch(() => undefined);
    ready.catch(() => undefined);
    return { ready, failed };
  }

  /**
   * Opens the puts; the returned promise settles once they handed what stands (rejects when the
   * bucket cannot be opened). A watch of them that fails never stops the wants.
   */
  #openPuts(signal: AbortSignal, failures: Promise<never>[]): Promise<void> {
    this.#putsTried = Date.now();
    this.#putsOpen = true;
    const w = this.#watch(Bucket.puts, signal, true);
    failures.push(w.failed);
    w.ready.then(
      () => {
        this.#log(`the bucket ${Bucket.puts} is open: puts are taken into account`);
        // What it handed before its marker was not noted node by node: any node may have a put.
        this.#touchedAll = true;
        this.#markDirty();
      },
      () => {
        this.#putsOpen = false;
      },
    );
    return w.ready;
  }

  #maybeReopenPuts(signal: AbortSignal, failures: Promise<never>[]): void {
    if (this.#putsOpen) return;
    if (Date.now() - this.#putsTried < (this.#options.putsReopenIntervalMs ?? 60_000)) return;
    void this.#openPuts(signal, failures).catch(() => undefined);
  }

  /** Takes one watched change into memory and notes the nodes it touches. */
  #apply(
    bucket: string,
    event: Exclude<WatchEvent<unknown>, { type: "current" }>,
    live: boolean,
  ): void {
    const key = event.key;
    if (event.type === "invalid") {
      this.#log(`${bucket} ${key}: ${event.problem.message}; taken as absent`);
    }
    const value = event.type === "put" ? event.value : undefined;
    let changed: boolean;
    if (bucket === Bucket.have) {
      const record: HaveRecord = this.#maps.have.get(key) ?? { current: undefined, history: [] };
      const have = value as Have | undefined;
      const next: HaveRecord =
        have === undefined
          ? { current: undefined, history: record.history }
          : {
              current: have,
              history: [...record.history, { ...have, revision: event.revision }].slice(-64),
            };
      this.#maps.have.set(key, next);
      changed = true;
    } else {
      const map = mapOf(this.#maps, bucket);
      const before = map.get(key);
      changed =
        before === undefined || value === undefined
          ? before !== value
          : canonicalJson(before) !== canonicalJson(value);
      if (value === undefined) map.delete(key);
      else map.set(key, value);
    }
    this.#index(bucket, key);
    // Before the first pass nothing needs noting: it decides every node.
    if (changed && live) this.#touch(bucket, key);
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
  #touch(bucket: string, key: string): void {
    const touchModule = (module: string): void => {
      const all = allKey(module);
      if (all === undefined || this.#maps.assignments.has(all) || this.#maps.puts.has(all)) {
        this.#touchedAll = true;
        return;
      }
      for (const n of this.#moduleNodes.get(module) ?? []) this.#touched.add(n);
    };
    const first = key.split(".")[0] as string;
    switch (bucket) {
      case Bucket.presence:
      case Bucket.composed:
      case Bucket.compositions:
      case Bucket.have:
      case Bucket.wants:
      case Bucket.differences:
        this.#touched.add(first);
        break;
      case Bucket.assignments:
      case Bucket.puts:
      case Bucket.retries:
        if (first === ALL_NODES) this.#touchedAll = true;
        else this.#touched.add(first);
        break;
      case Bucket.modules:
      case Bucket.candidates:
      case Bucket.builds:
        touchModule(first);
        break;
      case Bucket.manifests:
        for (const b of this.#maps.builds.values())
          if (b.manifestDigest === key) touchModule(b.module);
        break;
      case Bucket.answers:
      case Bucket.asks: {
        const ask: Ask | undefined = this.#maps.own.asks.get(key);
        if (ask === undefined) this.#touchedAll = true;
        else touchModule(ask.module);
        break;
      }
      default:
        this.#touchedAll = true;
    }
    this.#markDirty();
  }

  #markDirty(): void {
    this.#dirty = true;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
