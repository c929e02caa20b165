/**
 * Reading the newest of a stream under one filter without reading all of it: windows of
 * sequences read backwards from the end (or from `before`), each once, the first a few sequences
 * per message wanted and every next one four times as wide, until enough messages are found, the
 * messages found are older than `since`, or the stream's start is reached. What it costs follows
 * the messages near the end, not what the stream keeps (the logs' pages, the tools' counts).
 */
import { checkName } from "@mesh/protocol";
import { readStream, streamBounds, type MeshBus, type StreamReadOptions } from "@mesh/bus";

/**
 * The filter of one module's messages on one node or on every node, for a stream whose subjects
 * are `<prefix>.<node>.<module>` (the logs, the tools' counts).
 */
export const moduleFilter = (prefix: string, module: string, node: string | undefined): string =>
  `${prefix}.${node === undefined ? "*" : checkName("node", node)}.${checkName("module", module)}`;

/** The first window read, in stream sequences per message wanted; it grows fourfold after. */
const FIRST_WINDOW_PER_MESSAGE = 4;

export interface Kept<T> {
  readonly seq: number;
  readonly subject: string;
  /** When the stream stored it. */
  readonly time: Date;
  readonly value: T;
}

export interface NewestQuery<T> {
  readonly filter: string;
  readonly schema: StreamReadOptions<T>["schema"];
  /** The most messages wanted. */
  readonly count: number;
  /** Messages stored before this sequence; the newest when absent. */
  readonly before?: number;
  /** Stop once the messages found were stored before this time (ms since the epoch). */
  readonly since?: number;
}

export interface Newest<T> {
  /** Oldest first: up to `count` more than the query wants, from the windows read whole. */
  readonly kept: ReadonlyArray<Kept<T>>;
  /** The lowest sequence read from. */
  readonly end: number;
  /** Whether the stream holds earlier messages than those read. */
  readonly earlier: boolean;
  /** The sequence the read began below. */
  readonly top: number;
}

export async function readNewest<T>(
  bus: MeshBus,
  stream: string,
  query: NewestQuery<T>,
  signal: AbortSignal,
): Promise<Newest<T>> {
  const bounds = await streamBounds(bus, stream, { signal });
  const top = Math.min(query.before ?? bounds.last + 1, bounds.last + 1);
  let end = top;
  let span = query.count * FIRST_WINDOW_PER_MESSAGE;
  let kept: Array<Kept<T>> = [];
  const oldEnough = (): boolean =>
    query.since !== undefined && kept[0] !== undefined && kept[0].time.getTime() < query.since;
  while (kept.length < query.count && end > bounds.first && !oldEnough()) {
    const start = Math.max(bounds.first, end - span);
    kept = [...(await readWindow(bus, stream, query, start, end, signal)), ...kept];
    end = start;
    span *= 4;
  }
  return { kept, end, earlier: end > bounds.first, top };
}

/** The messages under the filter with sequences in [start, end). */
async function readWindow<T>(
  bus: MeshBus,
  stream: string,
  query: NewestQuery<T>,
  start: number,
  end: number,
  signal: AbortSignal,
): Promise<Array<Kept<T>>> {
  const out: Array<Kept<T>> = [];
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const event of readStream(bus, stream, {
      filter: query.filter,
      schema: query.schema,
      startSeq: start,
      signal: stop.signal,
    })) {
      if (event.type === "current" || event.seq >= end) break;
      if (event.type === "message") out.push(event);
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    stop.abort();
  }
  return out;
}
