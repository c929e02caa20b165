/**
 * A module's logs for the page: pages read backwards from the end of `mesh-logs` (never the whole
 * stream: each page reads a window of sequences under the module's filter, the window growing
 * until it holds a page), then a live tail from where the page ended.
 *
 * Across nodes the lines come in the stream's order, which is the order the server stored them:
 * interleaved by time.
 */
import { LogLine, Stream, Subject, checkName } from "@mesh/protocol";
import { readStream, streamBounds, type MeshBus } from "@mesh/bus";
import type { LogEntry, LogPage } from "./browser/wire.js";

/** How many lines a page holds at most. */
export const MAX_LOG_PAGE = 500;
/** The first window read, in stream sequences per line wanted; it grows fourfold after. */
const FIRST_WINDOW_PER_LINE = 4;

export interface LogQuery {
  readonly module: string;
  /** One node's lines; every node's when absent. */
  readonly node?: string;
  /** Lines stored before this sequence (an earlier page); the newest lines when absent. */
  readonly before?: number;
  readonly count: number;
}

/** The filter of a module's lines on one node or on every node. */
export const logFilter = (module: string, node: string | undefined): string =>
  `${Subject.logsPrefix}.${node === undefined ? "*" : checkName("node", node)}.${checkName("module", module)}`;

/** Reads the query's page: at most `count` lines, oldest first, and where the next one begins. */
export async function readLogPage(
  bus: MeshBus,
  query: LogQuery,
  signal: AbortSignal,
): Promise<LogPage> {
  const filter = logFilter(query.module, query.node);
  const count = Math.min(Math.max(1, query.count), MAX_LOG_PAGE);
  const bounds = await streamBounds(bus, Stream.logs, { signal });
  const top = Math.min(query.before ?? bounds.last + 1, bounds.last + 1);
  let end = top;
  let span = count * FIRST_WINDOW_PER_LINE;
  let lines: LogEntry[] = [];
  // Each window is read once: [start, end), then the one before it, four times as wide.
  while (lines.length < count && end > bounds.first) {
    const start = Math.max(bounds.first, end - span);
    lines = [...(await readWindow(bus, filter, start, end, signal)), ...lines];
    end = start;
    span *= 4;
  }
  const page = lines.slice(-count);
  return {
    lines: page,
    before: page[0]?.seq ?? end,
    more: lines.length > count || end > bounds.first,
    last: top - 1,
  };
}

/** The lines under the filter with sequences in [start, end). */
async function readWindow(
  bus: MeshBus,
  filter: string,
  start: number,
  end: number,
  signal: AbortSignal,
): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const event of readStream(bus, Stream.logs, {
      filter,
      schema: LogLine,
      startSeq: start,
      signal: stop.signal,
    })) {
      if (event.type === "current" || event.seq >= end) break;
      if (event.type === "message") out.push(entryOf(event.subject, event.seq, event.value));
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    stop.abort();
  }
  return out;
}

/** Follows the filter's new lines from `after` on (exclusive) until the signal aborts. */
export async function tailLogs(
  bus: MeshBus,
  query: { readonly module: string; readonly node?: string; readonly after: number },
  signal: AbortSignal,
  onLine: (entry: LogEntry) => void,
): Promise<void> {
  for await (const event of readStream(bus, Stream.logs, {
    filter: logFilter(query.module, query.node),
    schema: LogLine,
    startSeq: query.after + 1,
    signal,
  })) {
    if (event.type === "message") onLine(entryOf(event.subject, event.seq, event.value));
  }
}

function entryOf(subject: string, seq: number, value: LogLine): LogEntry {
  const [, , node = "", module = ""] = subject.split(".");
  return { seq, node, module, ...value };
}
