/**
 * A stream that keeps the last word per subject (conditions, keeps) as a mirror source: the key
 * is the subject past the prefix, each message a put of it, so the mirror keeps, retries and
 * catches up on it as it does on a bucket.
 *
 * ```ts
 * Mirror.start({
 *   sources: { keeps: { bucket: streamSource(bus, { stream: Stream.keeps, prefix: Subject.keepsPrefix, schema: Keeps }) } },
 *   touched,
 * });
 * ```
 */
import type { z } from "zod";
import type { WatchEvent } from "../kv-bucket.js";
import type { MeshBus } from "../mesh-bus.js";
import { readStream, type StreamReadOptions } from "../stream-reader.js";
import type { Watchable } from "./mirror.js";

export interface StreamSourceOptions<T> {
  readonly stream: string;
  /** The subjects read are `<prefix>.>`; a message's key is its subject past `<prefix>.`. */
  readonly prefix: string;
  readonly schema: z.ZodType<T>;
  /** What the mirror's log calls it; the stream's name by default. */
  readonly name?: string;
  /** `all` (default) or `last-per-subject`: what stands is read so each time it is watched. */
  readonly deliver?: Exclude<StreamReadOptions<T>["deliver"], "new">;
}

/** The stream as a Watchable; a watch's `key` and `include` are not used (every subject, last). */
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
    filter: `${prefix}>`,
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
