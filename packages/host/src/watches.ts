/**
 * What the host's reconciler watches on the bus: its node's composition and the mesh-config keys
 * it reads. Each is optional (the host never stops for a bus it cannot hear, it goes on with what
 * it applied) and lasts one session of the bus: a watch starts on the host's connection once its
 * bus side is open, ends when the bus comes back after a loss, and starts again on it, catching up
 * with what it missed. Before the first session a source is not there: the reconciler stands
 * without it at once and applies what the host kept on disk.
 */
import {
  KvBucket,
  skippingInvalid,
  type MeshBus,
  type Watchable,
  type WatchEvent,
} from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MeshError,
  nodeKey,
  type BucketValueOf,
  type ConfigValue,
} from "@mesh/protocol";
import type { AppliedStore } from "./applied-state.js";
import { HeardComposition, type Heard } from "./composition-read.js";

type Json = ConfigValue["value"];

/** One session of the bus: its connection, and a signal that aborts when the session ends. */
interface Session {
  readonly bus: MeshBus;
  readonly ended: AbortController;
}

/** The bus the host's watches use: a session per connection and per return of the bus. */
export class BusSessions {
  #current: Session | undefined;
  #waiting: Array<() => void> = [];

  /** A new session on `bus`: the watches of the one before end, and start again on this one. */
  begin(bus: MeshBus): void {
    this.#current?.ended.abort();
    this.#current = { bus, ended: new AbortController() };
    for (const wake of this.#waiting.splice(0)) wake();
  }

  /** The session now, or the next one; undefined when `signal` aborts first. */
  async next(signal: AbortSignal | undefined): Promise<Session | undefined> {
    while (this.#current === undefined) {
      if (signal?.aborted === true) return undefined;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          signal?.removeEventListener("abort", wake);
          this.#waiting = this.#waiting.filter((w) => w !== wake);
          resolve();
        };
        this.#waiting.push(wake);
        signal?.addEventListener("abort", wake, { once: true });
      });
    }
    return this.#current;
  }

  get current(): Session | undefined {
    return this.#current;
  }

  /**
   * A layout bucket watched in the session there is, or the next one. Its first watch, before the
   * host has a bus, fails at once: a mirror stands without an optional source that fails.
   */
  watchable<B extends Bucket>(bucket: B): Watchable<BucketValueOf<B>> {
    return this.watchableAs(bucket, (bus) => KvBucket.open(bus, bucket));
  }

  /** The same, with the bucket's values read by the caller's `open` (another schema). */
  watchableAs<T>(bucket: Bucket, open: (bus: MeshBus) => Promise<KvBucket<T>>): Watchable<T> {
    let first = true;
    return {
      name: bucket,
      watch: (options) => {
        const before = first;
        first = false;
        return this.#watch(bucket, open, before, options);
      },
    };
  }

  async *#watch<T>(
    bucket: Bucket,
    open: (bus: MeshBus) => Promise<KvBucket<T>>,
    first: boolean,
    options: Parameters<Watchable<unknown>["watch"]>[0],
  ): AsyncGenerator<WatchEvent<T>> {
    if (first && this.#current === undefined)
      throw new MeshError(
        ErrorCode.BUS_UNAVAILABLE,
        "the host has no bus yet: it applies the composition it kept, and watches once it connects",
      );
    const session = await this.next(options.signal);
    if (session === undefined) return;
    // The watch ends with the mirror or with the session, whichever first.
    const end = new AbortController();
    const stop = (): void => end.abort();
    options.signal?.addEventListener("abort", stop, { once: true });
    session.ended.signal.addEventListener("abort", stop, { once: true });
    if (options.signal?.aborted === true || session.ended.signal.aborted) stop();
    try {
      const kv = await open(session.bus);
      yield* kv.watch({ ...options, signal: end.signal });
    } finally {
      options.signal?.removeEventListener("abort", stop);
      session.ended.signal.removeEventListener("abort", stop);
    }
  }
}

/** The host's sources: its composition, and the config keys it reads. */
export type WatchSources = ReturnType<typeof watchSources>;

/** The sources of the host of `node`, watched in `sessions`; config starts from what it kept. */
export function watchSources(options: {
  readonly node: string;
  readonly store: AppliedStore;
  readonly sessions: BusSessions;
  readonly log: (line: string) => void;
}) {
  const { node, store, sessions, log } = options;
  // Through the bucket's leader (decision 0210): what the host serves its runtime's asks from is
  // never what a copy still catching up held before the newest acknowledged writes.
  const config = () =>
    skippingInvalid(
      sessions.watchableAs(Bucket.config, (bus) =>
        KvBucket.open(bus, Bucket.config, { fromLeader: true }),
      ),
      (key, problem) => log(`ignored an invalid config value for ${key}: ${problem.message}`),
    );
  // What the host kept is where each starts: a key a fresh watch does not hand was deleted
  // while the host was away, and goes.
  const kept = (parts: number): Map<string, Json> =>
    new Map(
      Object.entries(store.config as Record<string, Json>).filter(
        ([key]) => key.split(".").length === parts,
      ),
    );
  const inner = (_: Json | undefined, value: ConfigValue | undefined): Json | undefined =>
    value?.value;
  return {
    composed: {
      optional: true,
      key: nodeKey(node),
      // Read as any version wrote it: one this host cannot apply is refused, not ignored
      // (composition-read.ts).
      bucket: skippingInvalid(
        sessions.watchableAs(Bucket.composed, (bus) =>
          KvBucket.openWith(bus, Bucket.composed, HeardComposition),
        ),
        (_, problem) => log(`ignored an invalid composition: ${problem.message}`),
      ),
    },
    // Only the config keys this node reads: mesh-wide (`<module>.<key>`) and its own
    // (`<module>.<key>.<node>`); another node's values never reach this host.
    config: { optional: true, key: "*.*", bucket: config(), into: kept(2), fold: inner },
    "own config": {
      optional: true,
      key: `*.*.${node}`,
      bucket: config(),
      into: kept(3),
      fold: inner,
    },
  } as const;
}

/** The composition a change of the `composed` source says: a deleted one is an empty one. */
export function composedOf(node: string, after: Heard | undefined): Heard {
  return after ?? { composed: { node, resources: [], fingerprint: "none" } };
}
