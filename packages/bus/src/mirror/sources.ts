/**
 * What a mirror can watch besides a `KvBucket` it holds: a layout bucket opened when it is
 * watched (so a source can be declared before anything is awaited), a stream that keeps the
 * last word per subject (conditions, keeps), and either of them with the values that break
 * their schema left out instead of taken as absent.
 *
 * ```ts
 * Mirror.start({
 *   sources: {
 *     composed: { bucket: skippingInvalid(openedOnWatch(bus, Bucket.composed), report), key: node },
 *     keeps: { bucket: streamSource(bus, { stream: Stream.keeps, prefix: Subject.keepsPrefix, schema: Keeps }) },
 *   },
 *   touched,
 * });
 * ```
 */
import type { z } from "zod";
import { Condition, ErrorCode, Stream, Subject, isMeshError } from "@mesh/protocol";
import type { Bucket, BucketValueOf, MeshError } from "@mesh/protocol";
import { readAgainUnanswered } from "../bus-errors.js";
import { KvBucket, type WatchEvent } from "../kv-bucket.js";
import type { MeshBus } from "../mesh-bus.js";
import { readStream, type StreamReadOptions } from "../stream-reader.js";
import type { Watchable } from "./mirror.js";

/** A layout bucket, opened each time it is watched. */
export function openedOnWatch<B extends Bucket>(
  bus: MeshBus,
  bucket: B,
): Watchable<BucketValueOf<B>> {
  return {
    name: bucket,
    watch: async function* (options) {
      yield* (await KvBucket.open(bus, bucket)).watch(options);
    },
  };
}

/**
 * The source with every value that breaks its schema reported and left out: what the mirror
 * kept for its key stays until a good value comes (the mirror alone takes it as absent).
 */
export function skippingInvalid<T>(
  source: Watchable<T>,
  report: (key: string, problem: MeshError) => void,
): Watchable<T> {
  return {
    name: source.name,
    watch: async function* (options) {
      for await (const event of source.watch(options)) {
        if (event.type === "invalid") report(event.key, event.problem);
        else yield event;
      }
    },
  };
}

export interface StreamSourceOptions<T> {
  readonly stream: string;
  /** A message's key is its subject past `<prefix>.`. */
  readonly prefix: string;
  /** One subject filter under the prefix (what a grant reads); every subject, `<prefix>.>`, by default. */
  readonly filter?: string;
  readonly schema: z.ZodType<T>;
  /** What the mirror's log calls it; the stream's name by default. */
  readonly name?: string;
  /** `all` (default) or `last-per-subject`: what stands is read so each time it is watched. */
  readonly deliver?: Exclude<StreamReadOptions<T>["deliver"], "new">;
}

/**
 * A stream as a source: the key is the subject past the prefix, each message a put of it. A
 * watch's `key` and `include` are not used (every subject, as `deliver` says).
 */
export function streamSource<T>(bus: MeshBus, options: StreamSourceOptions<T>): Watchable<T> {
  return {
    name: options.name ?? options.stream,
    watch: ({ signal }) => streamEvents(bus, options, signal),
  };
}

async function* streamEvents<T>(
  bus: MeshBus,
  options: StreamSourceOptions<T>,
  signal: AbortSignal | undefined,
): AsyncGenerator<WatchEvent<T>> {
  const prefix = `${options.prefix}.`;
  for await (const event of readStream(bus, options.stream, {
    filter: options.filter ?? `${prefix}>`,
    schema: options.schema,
    ...(options.deliver === undefined ? {} : { deliver: options.deliver }),
    ...(signal === undefined ? {} : { signal }),
  })) {
    if (event.type === "current") {
      yield event;
      continue;
    }
    const key = event.subject.slice(prefix.length);
    yield event.type === "message"
      ? { type: "put", key, value: event.value, revision: event.seq, created: event.time }
      : { type: "invalid", key, revision: event.seq, problem: event.problem };
  }
}

/**
 * The conditions stream as a source: it keeps the last condition per module and name, so a key
 * is `<module>.<name>`.
 */
export function conditionsSource(
  bus: MeshBus,
  options: Pick<StreamSourceOptions<Condition>, "filter" | "name" | "deliver"> = {},
): Watchable<Condition> {
  return streamSource(bus, {
    ...options,
    stream: Stream.conditions,
    prefix: Subject.conditionsPrefix,
    schema: Condition,
  });
}

/**
 * What a source holds as it stands, read once (its values by key; a value that breaks its
 * schema taken as absent): for what shows it and ends. A read cut short by `signal` throws. A
 * read the bus did not answer in time, or whose watch ended before what stands was handed, is
 * made again from the start a few times (`readAgainUnanswered`): with a server of a cluster cut
 * off, a third of the watches' consumers are placed where nothing answers.
 */
export async function readStanding<T>(
  source: Watchable<T>,
  options: { readonly key?: string; readonly signal?: AbortSignal | undefined } = {},
): Promise<Map<string, T>> {
  return readAgainUnanswered(() => readStandingOnce(source, options), {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    also: (error) => isMeshError(error, ErrorCode.WATCH_ENDED),
  });
}

async function readStandingOnce<T>(
  source: Watchable<T>,
  options: { readonly key?: string; readonly signal?: AbortSignal | undefined },
): Promise<Map<string, T>> {
  const values = new Map<string, T>();
  const { signal } = options;
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    for await (const e of source.watch({
      signal: ac.signal,
      ...(options.key === undefined ? {} : { key: options.key }),
    })) {
      if (e.type === "current") break;
      if (e.type === "put") values.set(e.key, e.value);
      else values.delete(e.key);
    }
    // A read cut short by the caller's signal is a failure, not what stands.
    signal?.throwIfAborted();
  } finally {
    signal?.removeEventListener("abort", stop);
    ac.abort();
  }
  return values;
}
