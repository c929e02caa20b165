/**
 * The bucket mirror ("informer"): keeps buckets in memory, says when every one of them has
 * handed what stands, and tells its owner each change it applies, typed by its source. A watch
 * that ends (its bucket deleted and made again, its consumer gone, a server gone silent — the
 * watch notices within 10 s) is watched again: what stands then is read afresh and compared with
 * what the mirror holds, so every change missed meanwhile is applied and told. A source that
 * cannot be watched again for `giveUpMs` fails the mirror loudly.
 *
 * It holds no queue: what to do about a change, and when, is the owner's. A daemon gives it a
 * work queue through `reconciler()` (coalescing, retries, requeue-after); a reader that only
 * passes changes on (the view's pages) does so from `onChange`.
 *
 * ```ts
 * await using mirror = Mirror.start({
 *   sources: { presence: { bucket: presence }, wants: { bucket: wants } },
 *   onChange: (c) => queue.add(c.key.split(".")[0]),   // a change concerns its node
 *   log,
 * });
 * await mirror.ready;
 * ```
 */
import { setMaxListeners } from "node:events";
import { isDeepStrictEqual } from "node:util";
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import { isBusTrouble } from "../bus-errors.js";
import type { WatchEvent } from "../kv-bucket.js";
import { Backoff, delay } from "@mesh/kit";

/**
 * What a source watches: a `KvBucket`, or anything that hands what stands, one `current` marker,
 * then each change, as a bucket's watch does (the view reads the conditions stream so).
 */
export interface Watchable<T> {
  /** What it is called in the mirror's log (a bucket's name). */
  readonly name: string;
  watch(options: {
    readonly signal?: AbortSignal;
    readonly key?: string;
    readonly include?: "last" | "history";
  }): AsyncIterable<WatchEvent<T>>;
}

export interface MirrorSource<T, M = T> {
  readonly bucket: Watchable<T>;
  /** Only these keys (a key or a pattern with `*` / `>`); every key when omitted. */
  readonly key?: string;
  /** `history` hands every kept revision to `fold`; `last` (default) each key's latest. */
  readonly include?: "last" | "history";
  /** A bucket the mirror can do without: it is ready without it and keeps trying to open it. */
  readonly optional?: boolean;
  /** The map to keep the values in (the owner's own), a new one when omitted. */
  readonly into?: Map<string, M>;
  /** What is kept for a key from what was kept and a value handed (undefined: deleted). */
  readonly fold?: (before: M | undefined, value: T | undefined, revision: number) => M | undefined;
  /** How soon it is watched again after it ended or could not be opened; the mirror's by default. */
  readonly retry?: { readonly initialMs: number; readonly maxMs: number };
  /**
   * `when-asked` (an optional source only): once it could not be opened, or its watch ended, it is
   * tried again only when the owner calls `reopen` — the owner decides when a try is worth what
   * it costs the bus (the assigner: a pass started by a change, at most once a minute). `by-itself`
   * (the default): tried again on the `retry` backoff.
   */
  readonly reopen?: "by-itself" | "when-asked";
  /** Whether two kept values are the same (no change, nothing told); deep equality by default. */
  readonly equal?: (a: M, b: M) => boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnySource = MirrorSource<any, any>;
export type Sources = Record<string, AnySource>;
/** A source as the mirror handles it inside, whatever it keeps. */
type Loose = MirrorSource<unknown, unknown>;

/** What a source keeps for each key. */
export type Kept<P> = P extends { fold: (...a: never[]) => infer M | undefined }
  ? M
  : P extends { into: Map<string, infer M> }
    ? M
    : P extends { bucket: Watchable<infer T> }
      ? T
      : never;

/** One change the mirror applied, untyped (what any source's change is). */
export interface MirrorChange<S extends Sources = Sources> {
  readonly source: keyof S & string;
  readonly key: string;
  readonly before: unknown;
  readonly after: unknown;
}

/** One change the mirror applied, typed by its source: what was kept before and after. */
export type SourceChange<S extends Sources> = {
  readonly [N in keyof S & string]: {
    readonly source: N;
    readonly key: string;
    readonly before: Kept<S[N]> | undefined;
    readonly after: Kept<S[N]> | undefined;
  };
}[keyof S & string];

export interface MirrorOptions<S extends Sources> {
  readonly sources: S;
  /**
   * Told every change applied, typed by its source, also before `ready` (`isReady` says which):
   * an owner with a queue (a reconciler) adds the keys it concerns.
   */
  readonly onChange?: (change: SourceChange<S>) => void;
  /** A required source that cannot be watched again for this long fails the mirror; default 60 s. */
  readonly giveUpMs?: number;
  /** The first and the longest wait before watching a source again; default 250 ms and 5 s. */
  readonly retry?: { readonly initialMs: number; readonly maxMs: number };
  readonly log?: (line: string) => void;
  /** Told why a source cannot be heard each time a watch of it fails, and undefined once it is heard again. */
  readonly onProblem?: (source: keyof S & string, problem: MeshError | undefined) => void;
}

export class Mirror<S extends Sources> implements AsyncDisposable {
  readonly #o: MirrorOptions<S>;
  readonly #maps = new Map<string, Map<string, unknown>>();
  readonly #open = new Set<string>();
  readonly #stop = new AbortController();
  readonly #loops: Promise<void>[] = [];
  readonly #log: (line: string) => void;
  #isReady = false;
  /** A `when-asked` source waiting to be asked, by name: what starts its next try. */
  readonly #waiting = new Map<string, () => void>();
  /** Who waits on the outcome of a source's next try (true: it handed what stands). */
  readonly #tries = new Map<string, Array<(open: boolean) => void>>();
  #error: MeshError | undefined;
  readonly #failed: { promise: Promise<never>; reject: (e: MeshError) => void };
  readonly #ready: Promise<void>;

  private constructor(options: MirrorOptions<S>) {
    this.#o = options;
    this.#log = options.log ?? (() => undefined);
    // Each source's watch and wait listen on the one stop signal, by design.
    setMaxListeners(0, this.#stop.signal);
    let reject!: (e: MeshError) => void;
    const promise = new Promise<never>((_, r) => (reject = r));
    promise.catch(() => undefined);
    this.#failed = { promise, reject };
    this.#log(watchedLine(options.sources));
    const handed = Object.entries(options.sources as Record<string, Loose>).map(
      ([name, source]) => {
        this.#maps.set(name, source.into ?? new Map<string, unknown>());
        let handedNow!: () => void;
        const handedOnce = new Promise<void>((r) => (handedNow = r));
        this.#loops.push(this.#follow(name, source, handedNow));
        return handedOnce;
      },
    );
    this.#ready = Promise.race([Promise.all(handed), promise]).then(() => {
      this.#isReady = true;
    });
    this.#ready.catch(() => undefined);
  }

  /** Starts watching every source at once. */
  static start<S extends Sources>(options: MirrorOptions<S>): Mirror<S> {
    return new Mirror(options);
  }

  /** Settles once every source handed what stands (an optional one: or failed to open); rejects when the mirror fails. */
  get ready(): Promise<void> {
    return this.#ready;
  }

  get isReady(): boolean {
    return this.#isReady;
  }

  /** Rejects (with BUCKET_UNAVAILABLE or WATCH_ENDED) once a required source is lost for good. */
  get failed(): Promise<never> {
    return this.#failed.promise;
  }

  /** What a source holds now. */
  map<K extends keyof S & string>(source: K): ReadonlyMap<string, Kept<S[K]>> {
    return this.#maps.get(source) as ReadonlyMap<string, Kept<S[K]>>;
  }

  /** Whether a source is being heard now (an optional one may not be). */
  isOpen(source: keyof S & string): boolean {
    return this.#open.has(source);
  }

  /**
   * Tries a `when-asked` source again now, when it is not open; resolves once the try is over:
   * true when the source is heard (what stands handed and applied, its changes told), false
   * when it still cannot be (or the mirror stops). An open source resolves true at once.
   */
  reopen(source: keyof S & string): Promise<boolean> {
    if (this.#open.has(source)) return Promise.resolve(true);
    if (this.#stop.signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiting = this.#tries.get(source) ?? [];
      waiting.push(resolve);
      this.#tries.set(source, waiting);
      this.#waiting.get(source)?.();
    });
  }

  /** Stops every watch and waits until each has stopped; disposing twice is harmless. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled(this.#loops);
    for (const name of [...this.#tries.keys()]) this.#tried(name, false);
  }

  async #follow(name: string, source: Loose, handed: () => void): Promise<void> {
    const signal = this.#stop.signal;
    const retry = source.retry ?? this.#o.retry ?? { initialMs: 250, maxMs: 5_000 };
    const backoff = new Backoff({ ...retry, healthyMs: 10_000 });
    let lostSince: number | undefined;
    let heard = false;
    while (!signal.aborted) {
      try {
        backoff.started();
        await this.#watchOnce(name, source, signal, () => {
          if (heard) this.#log(`the watch of ${name} is back: caught up with what it missed`);
          else if (lostSince !== undefined) this.#log(`the bucket ${name} is open now`);
          heard = true;
          lostSince = undefined;
          this.#o.onProblem?.(name, undefined);
          handed();
          this.#tried(name, true);
        });
        if (signal.aborted) return;
        throw new MeshError(ErrorCode.WATCH_ENDED, `the watch of ${name} ended (the bus closed)`);
      } catch (error) {
        this.#open.delete(name);
        if (signal.aborted) return;
        const mesh = lost(name, error);
        this.#o.onProblem?.(name, mesh);
        // Before a required source was ever heard, a refusal (no such bucket, no permission)
        // fails the mirror at once; the bus's trouble (a watch that ended, a read it did not
        // answer in time, as a large bucket's first read can be) is tried again like any loss.
        if (!heard && source.optional !== true && !passing(mesh)) return this.#fail(mesh);
        if (!heard && source.optional === true) handed();
        this.#tried(name, false);
        if (source.optional === true && source.reopen === "when-asked") {
          this.#log(`${mesh.message}; tried again when asked`);
          await this.#asked(name, signal);
          continue;
        }
        lostSince ??= Date.now();
        if (source.optional !== true && Date.now() - lostSince > (this.#o.giveUpMs ?? 60_000)) {
          return this.#fail(
            new MeshError(
              mesh.code,
              `${mesh.message}; given up after ${this.#o.giveUpMs ?? 60_000} ms`,
              {
                cause: error,
              },
            ),
          );
        }
        const wait = backoff.next();
        this.#log(`${mesh.message}; watching ${name} again in ${wait} ms`);
        await delay(wait, { signal });
      }
    }
  }

  /** Resolves when the owner asks for a `when-asked` source again, or the mirror stops. */
  #asked(name: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.#waiting.delete(name);
        signal.removeEventListener("abort", done);
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      this.#waiting.set(name, done);
    });
  }

  /** The outcome of a source's try, told to whoever waits on it. */
  #tried(name: string, open: boolean): void {
    const waiting = this.#tries.get(name);
    if (waiting === undefined) return;
    this.#tries.delete(name);
    for (const resolve of waiting) resolve(open);
  }

  /** One watch of a source, until it ends: what it hands before its marker is compared with what is kept. */
  async #watchOnce(
    name: string,
    source: Loose,
    signal: AbortSignal,
    current: () => void,
  ): Promise<void> {
    const fold = source.fold ?? ((_: unknown, value: unknown) => value);
    let staging: Map<string, unknown> | undefined = new Map();
    for await (const event of source.bucket.watch({
      signal,
      ...(source.key === undefined ? {} : { key: source.key }),
      include: source.include ?? "last",
    })) {
      if (event.type === "current") {
        this.#settle(name, source, staging ?? new Map<string, unknown>());
        staging = undefined;
        this.#open.add(name);
        current();
        continue;
      }
      if (event.type === "invalid") {
        this.#log(`${name} ${event.key}: ${event.problem.message}; taken as absent`);
      }
      const value = event.type === "put" ? event.value : undefined;
      if (staging !== undefined) {
        const next = fold(staging.get(event.key), value, event.revision);
        if (next === undefined) staging.delete(event.key);
        else staging.set(event.key, next);
      } else {
        const map = this.#maps.get(name) as Map<string, unknown>;
        this.#set(name, source, event.key, fold(map.get(event.key), value, event.revision));
      }
    }
  }

  /** Makes the kept map what stands: every key that differs is set and told. */
  #settle(name: string, source: Loose, standing: Map<string, unknown>): void {
    const map = this.#maps.get(name) as Map<string, unknown>;
    for (const key of [...map.keys()])
      if (!standing.has(key)) this.#set(name, source, key, undefined);
    for (const [key, value] of standing) this.#set(name, source, key, value);
  }

  #set(name: string, source: Loose, key: string, after: unknown): void {
    const map = this.#maps.get(name) as Map<string, unknown>;
    const before = map.get(key);
    const same =
      before === undefined || after === undefined
        ? before === after
        : (source.equal ?? isDeepStrictEqual)(before, after);
    if (after === undefined) map.delete(key);
    else map.set(key, after);
    if (same) return;
    const change = { source: name, key, before, after };
    this.#o.onChange?.(change as SourceChange<S>);
  }

  #fail(error: MeshError): void {
    if (this.#error !== undefined) return;
    this.#error = error;
    this.#log(error.message);
    this.#failed.reject(error);
    this.#stop.abort();
  }
}

/** Whether a source's loss is the bus's trouble (tried again), not a refusal (final). */
function passing(error: MeshError): boolean {
  return isMeshError(error, ErrorCode.WATCH_ENDED) || isBusTrouble(error);
}

/** Why a source is not heard, as a MeshError that names it. */
function lost(name: string, error: unknown): MeshError {
  if (isMeshError(error, ErrorCode.WATCH_ENDED))
    return new MeshError(error.code, error.message, { key: name, cause: error });
  const detail = error instanceof Error ? error.message : String(error);
  return new MeshError(
    ErrorCode.BUCKET_UNAVAILABLE,
    `the bucket ${name} cannot be watched (${detail})`,
    {
      key: name,
      cause: error,
    },
  );
}

/**
 * What a mirror watches, said once as it starts (issue 13): a whole bucket brings this process
 * every change of every node, which is what grows with the fleet.
 */
export function watchedLine(
  sources: Readonly<
    Record<string, { readonly bucket: { readonly name: string }; readonly key?: string }>
  >,
): string {
  const whole: string[] = [];
  const part: string[] = [];
  for (const s of Object.values(sources)) {
    if (s.key === undefined || s.key === ">") whole.push(s.bucket.name);
    else part.push(`${s.bucket.name} (${s.key})`);
  }
  const parts = part.length === 0 ? "" : `; part of ${part.length}: ${part.join(", ")}`;
  return `watching ${whole.length} whole bucket(s), every node's changes: ${whole.join(", ")}${parts}`;
}
