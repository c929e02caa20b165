/**
 * The mesh as the view shows it, kept current by one watch per bucket and one read of the
 * conditions stream, shared by every page that is open. Pages get the whole state once every
 * source has handed what stands, then each change.
 */
import type { Bucket } from "@mesh/protocol";
import { Condition, Stream, Subject, type Build, type MeshError } from "@mesh/protocol";
import { Backoff, KvBucket, readStream, type MeshBus } from "@mesh/bus";
import {
  Source,
  type BuildSummary,
  type BusState,
  type Change,
  type FleetSummary,
  type Snapshot,
  type SourceProblem,
} from "./browser/wire.js";

/** What a listener hears after the state is ready. */
export type StateEvent =
  | { readonly type: "change"; readonly change: Change }
  | { readonly type: "problem"; readonly problem: SourceProblem }
  | { readonly type: "bus"; readonly bus: BusState };

export interface MeshStateOptions {
  readonly bus: MeshBus;
  readonly signal: AbortSignal;
  /** Told about every source that fails, with why; the state keeps going without it. */
  readonly onProblem?: (source: Source, error: MeshError | Error) => void;
  /** Waits between attempts to watch a source again after it failed (ms), doubling to 30 s. */
  readonly retryMs?: number;
}

const BUCKET_SOURCES = [
  Source.modules,
  Source.builds,
  Source.assignments,
  Source.puts,
  Source.presence,
  Source.wants,
  Source.have,
  Source.compositions,
  Source.differences,
  Source.asks,
  Source.answers,
] as const satisfies readonly Bucket[];

export class MeshState {
  readonly #bus: MeshBus;
  readonly #signal: AbortSignal;
  readonly #entries = new Map<Source, Map<string, unknown>>();
  /** Build logs are kept here, not in the entries, so a snapshot stays small. */
  readonly #logs = new Map<string, string>();
  readonly #problems = new Map<Source, string>();
  readonly #pending = new Set<Source>();
  readonly #listeners = new Set<(event: StateEvent) => void>();
  readonly #options: MeshStateOptions;
  #busState: BusState = "connected";
  readonly ready: Promise<void>;
  #markReady!: () => void;

  private constructor(options: MeshStateOptions) {
    this.#bus = options.bus;
    this.#signal = options.signal;
    this.#options = options;
    this.ready = new Promise((resolve) => (this.#markReady = resolve));
    for (const source of Object.values(Source)) {
      this.#entries.set(source, new Map());
      this.#pending.add(source);
    }
  }

  /** Starts every watch; `ready` resolves once each has handed what stands (or failed). */
  static start(options: MeshStateOptions): MeshState {
    const state = new MeshState(options);
    for (const source of BUCKET_SOURCES)
      void state.#follow(source, () => state.#watchBucket(source));
    void state.#follow(Source.conditions, () => state.#readConditions());
    void state.#followBus();
    return state;
  }

  /** The state as a page first gets it: these sources whole, and the fleet's summary. */
  snapshot(sources: readonly Source[], fleet: FleetSummary, now: Date = new Date()): Snapshot {
    const entries: Partial<Record<Source, Record<string, unknown>>> = {};
    for (const source of sources) entries[source] = Object.fromEntries(this.entries(source));
    return {
      at: now.toISOString(),
      entries,
      fleet,
      problems: Object.fromEntries(this.#problems),
      bus: this.#busState,
    };
  }

  /** One source's values by key, as the page would see them (live: read, never keep). */
  entries(source: Source): ReadonlyMap<string, unknown> {
    return this.#entries.get(source) ?? new Map<string, unknown>();
  }

  /** One value as the page sees it, or undefined. */
  get(source: Source, key: string): unknown {
    return this.#entries.get(source)?.get(key);
  }

  /** A build's log, or undefined when there is no such build. */
  buildLog(key: string): string | undefined {
    return this.#logs.get(key);
  }

  /** Hears every event until the returned function is called. */
  listen(listener: (event: StateEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: StateEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  #sourceCurrent(source: Source): void {
    if (!this.#pending.delete(source)) return;
    if (this.#pending.size === 0) this.#markReady();
  }

  /**
   * Keeps one source followed until the view stops: when its watch ends with an error (the bucket
   * is missing, the bus went away for good), the problem is shown and the watch tried again.
   */
  async #follow(source: Source, run: () => Promise<void>): Promise<void> {
    const first = this.#options.retryMs ?? 1_000;
    const backoff = new Backoff({
      initialMs: first,
      maxMs: Math.max(first, 30_000),
      healthyMs: 60_000,
    });
    while (!this.#signal.aborted) {
      try {
        backoff.started();
        await run();
        if (this.#signal.aborted) return;
      } catch (error) {
        if (this.#signal.aborted) return;
        const message = (error as Error).message;
        this.#options.onProblem?.(source, error as Error);
        if (this.#problems.get(source) !== message) {
          this.#problems.set(source, message);
          this.#emit({ type: "problem", problem: { source, problem: message } });
        }
        // A page should not wait forever for a source that cannot be read.
        this.#sourceCurrent(source);
      }
      await pause(backoff.next(), this.#signal);
    }
  }

  /**
   * Watches a bucket. What stands is gathered first and then compared with what the state held
   * (after a retry, keys that went away meanwhile are deleted), then each change is applied.
   */
  async #watchBucket(source: (typeof BUCKET_SOURCES)[number]): Promise<void> {
    const bucket = await KvBucket.open(this.#bus, source);
    const standing = new Map<string, unknown>();
    let current = false;
    for await (const event of bucket.watch({ signal: this.#signal })) {
      switch (event.type) {
        case "put":
          if (current) this.#set(source, event.key, event.value);
          else standing.set(event.key, event.value);
          break;
        case "delete":
          if (current) this.#set(source, event.key, undefined);
          else standing.delete(event.key);
          break;
        case "invalid":
          this.#options.onProblem?.(source, event.problem);
          break;
        case "current": {
          current = true;
          this.#clearProblem(source);
          const held = this.#entries.get(source) ?? new Map<string, unknown>();
          for (const key of [...held.keys()])
            if (!standing.has(key)) this.#set(source, key, undefined);
          for (const [key, value] of standing) this.#set(source, key, value);
          this.#sourceCurrent(source);
          break;
        }
      }
    }
  }

  /** The conditions stream keeps the last condition per module and name: the key is `<module>.<name>`. */
  async #readConditions(): Promise<void> {
    const standing = new Map<string, unknown>();
    let current = false;
    const prefix = `${Subject.conditionsPrefix}.`;
    for await (const event of readStream(this.#bus, Stream.conditions, {
      filter: `${prefix}>`,
      schema: Condition,
      signal: this.#signal,
    })) {
      switch (event.type) {
        case "message": {
          const key = event.subject.slice(prefix.length);
          if (current) this.#set(Source.conditions, key, event.value);
          else standing.set(key, event.value);
          break;
        }
        case "invalid":
          this.#options.onProblem?.(Source.conditions, event.problem);
          break;
        case "current":
          current = true;
          this.#clearProblem(Source.conditions);
          for (const [key, value] of standing) this.#set(Source.conditions, key, value);
          this.#sourceCurrent(Source.conditions);
          break;
      }
    }
  }

  async #followBus(): Promise<void> {
    for await (const event of this.#bus.events()) {
      if (this.#signal.aborted) return;
      const next: BusState | undefined =
        event.type === "disconnected"
          ? "disconnected"
          : event.type === "reconnected"
            ? "connected"
            : undefined;
      if (next !== undefined && next !== this.#busState) {
        this.#busState = next;
        this.#emit({ type: "bus", bus: next });
      }
    }
  }

  #clearProblem(source: Source): void {
    if (this.#problems.delete(source)) this.#emit({ type: "problem", problem: { source } });
  }

  /** Sets (or with undefined, deletes) one key and tells the listeners when it changed. */
  #set(source: Source, key: string, value: unknown): void {
    const map = this.#entries.get(source);
    if (map === undefined) return;
    let shown = value;
    if (source === Source.builds) {
      if (value === undefined) this.#logs.delete(key);
      else {
        const { log, ...rest } = value as Build;
        this.#logs.set(key, log);
        shown = {
          ...rest,
          logLines: log === "" ? 0 : log.split("\n").length,
        } satisfies BuildSummary;
      }
    }
    if (shown === undefined) {
      if (!map.delete(key)) return;
      this.#emit({ type: "change", change: { source, key } });
      return;
    }
    if (JSON.stringify(map.get(key)) === JSON.stringify(shown)) return;
    map.set(key, shown);
    this.#emit({ type: "change", change: { source, key, value: shown } });
  }
}

/** Waits `ms`, or less when the signal aborts: a retry's back-off, never a synchronisation. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
