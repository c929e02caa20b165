/**
 * The mesh as the view shows it: its buckets and the conditions stream kept by the one bucket
 * mirror (`@mesh/bus`'s `Mirror`), shared by every page that is open. Pages get the whole state
 * once every source has handed what stands (or failed to), then each change. A watch that ends is
 * watched again by the mirror, which applies what was missed meanwhile; a source that cannot be
 * read is shown as a problem, and the state goes on without it.
 */
import { isDeepStrictEqual } from "node:util";
import type { Bucket } from "@mesh/protocol";
import type { Build, MeshError } from "@mesh/protocol";
import {
  Mirror,
  openedOnWatch,
  skippingInvalid,
  conditionsSource,
  type MeshBus,
  type MirrorSource,
  type SourceChange,
  type Watchable,
  type ConnectionState,
} from "@mesh/bus";
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
  /** Told about every source that fails, with why, and every value that breaks its schema. */
  readonly onProblem?: (source: Source, error: MeshError | Error) => void;
  /** Waits between attempts to watch a source again after it failed (ms), doubling to 30 s. */
  readonly retryMs?: number;
  /**
   * The sources with a key per node (presence, wants, have, differences, compositions) are
   * watched only once this resolves: a large fleet's first paint, read by key, does not wait
   * behind them (decision 0090). At once when omitted.
   */
  readonly nodeSourcesAfter?: Promise<void>;
}

/** The sources with a key per node: the ones a large fleet's first paint must not wait behind. */
const PER_NODE = new Set<Source>([
  Source.presence,
  Source.wants,
  Source.have,
  Source.differences,
  Source.compositions,
]);

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
  Source.rollouts,
  Source.configWaves,
] as const satisfies readonly Bucket[];

type ViewSources = Record<Source, MirrorSource<unknown>>;

export class MeshState {
  readonly #options: MeshStateOptions;
  readonly #mirror: Mirror<ViewSources>;
  /** Builds as pages see them, without their logs (the mirror keeps them whole). */
  readonly #builds = new Map<string, BuildSummary>();
  readonly #problems = new Map<Source, string>();
  readonly #listeners = new Set<(event: StateEvent) => void>();
  /** Resolves once every source has handed what stands, or failed once. */
  readonly ready: Promise<void>;

  private constructor(options: MeshStateOptions) {
    this.#options = options;
    const first = options.retryMs ?? 1_000;
    this.#mirror = Mirror.start({
      sources: viewSources(options),
      // No queue: each change is handed on to the pages as it is applied.
      onChange: (change) => this.#changed(change),
      retry: { initialMs: first, maxMs: Math.max(first, 30_000) },
      onProblem: (source, problem) => this.#problem(source, problem),
    });
    // Every source is optional: the mirror is ready once each handed what stands or failed once,
    // and it never fails; it stops with the view.
    this.ready = this.#mirror.ready;
    options.signal.addEventListener("abort", () => void this.#mirror[Symbol.asyncDispose](), {
      once: true,
    });
  }

  /** Starts every watch; `ready` resolves once each has handed what stands (or failed). */
  static start(options: MeshStateOptions): MeshState {
    const state = new MeshState(options);
    state.#followBus();
    return state;
  }

  /** Whether every source has handed what stands (or failed once): `ready` has resolved. */
  get isReady(): boolean {
    return this.#mirror.isReady;
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
      bus: busStateOf(this.#options.bus.connection),
    };
  }

  /** One source's values by key, as the page would see them (live: read, never keep). */
  entries(source: Source): ReadonlyMap<string, unknown> {
    return source === Source.builds ? this.#builds : this.#mirror.map(source);
  }

  /** One value as the page sees it, or undefined. */
  get(source: Source, key: string): unknown {
    return this.entries(source).get(key);
  }

  /** A build's log, or undefined when there is no such build. */
  buildLog(key: string): string | undefined {
    return (this.#mirror.map(Source.builds).get(key) as Build | undefined)?.log;
  }

  /** Hears every event until the returned function is called. */
  listen(listener: (event: StateEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: StateEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  /** A change the mirror applied, as the pages see it (a build without its log). */
  #changed({ source, key, after }: SourceChange<ViewSources>): void {
    let shown = after;
    if (source === Source.builds) {
      const before = this.#builds.get(key);
      if (after === undefined) this.#builds.delete(key);
      else {
        const { log, ...rest } = after as Build;
        const summary: BuildSummary = {
          ...rest,
          logLines: log === "" ? 0 : log.split("\n").length,
        };
        // A build whose log alone changed shows the same.
        if (isDeepStrictEqual(before, summary)) return;
        this.#builds.set(key, summary);
        shown = summary;
      }
    }
    this.#emit({
      type: "change",
      change: shown === undefined ? { source, key } : { source, key, value: shown },
    });
  }

  /** A source lost (shown as its problem, said once per message) or heard again (cleared). */
  #problem(source: Source, problem: MeshError | undefined): void {
    if (problem === undefined) {
      if (this.#problems.delete(source)) this.#emit({ type: "problem", problem: { source } });
      return;
    }
    this.#options.onProblem?.(source, problem);
    if (this.#problems.get(source) === problem.message) return;
    this.#problems.set(source, problem.message);
    this.#emit({ type: "problem", problem: { source, problem: problem.message } });
  }

  #followBus(): void {
    const { bus, signal } = this.#options;
    bus.onConnection(
      (now, before) => {
        // A view closing its connection is stopping: its pages are told nothing more.
        if (now.status === "closed") return;
        const next = busStateOf(now);
        if (next !== busStateOf(before)) this.#emit({ type: "bus", bus: next });
      },
      { signal },
    );
  }
}

/** What the page says of the view's connection: reached, or not (away, or closed). */
function busStateOf(connection: ConnectionState): BusState {
  return connection.status === "connected" ? "connected" : "disconnected";
}

/**
 * Every source of the view, each optional: the view shows what it can read. A value that breaks
 * its schema is reported and left out, so what the page showed for its key stays until a good
 * value comes. The conditions stream keeps the last condition per module and name: its key is
 * `<module>.<name>`.
 */
function viewSources({ bus, onProblem, nodeSourcesAfter }: MeshStateOptions): ViewSources {
  const sources = {} as Record<Source, MirrorSource<unknown>>;
  for (const source of BUCKET_SOURCES) {
    const opened = openedOnWatch(bus, source);
    const gated =
      PER_NODE.has(source) && nodeSourcesAfter !== undefined
        ? watchedAfter(nodeSourcesAfter, opened)
        : opened;
    sources[source] = {
      optional: true,
      bucket: skippingInvalid(gated, (_, p) => onProblem?.(source, p)),
    };
  }
  const conditions = conditionsSource(bus, { name: Source.conditions });
  sources[Source.conditions] = {
    optional: true,
    bucket: skippingInvalid(conditions, (_, p) => onProblem?.(Source.conditions, p)),
  };
  return sources;
}

/** The source, watched only once `after` resolves. */
function watchedAfter<T>(after: Promise<void>, source: Watchable<T>): Watchable<T> {
  return {
    name: source.name,
    watch: async function* (options) {
      await after;
      yield* source.watch(options);
    },
  };
}
