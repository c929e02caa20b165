/**
 * A module's logs for the page: pages read backwards from the end of `mesh-logs` (never the whole
 * stream: each page reads a window of sequences under the module's filter, the window growing
 * until it holds a page), then a live tail from where the page ended.
 *
 * Across nodes the lines come in the stream's order, which is the order the server stored them:
 * interleaved by time.
 */
import { LogLine, Stream, Subject } from "@mesh/protocol";
import { readStream, type MeshBus } from "@mesh/bus";
import type { LogEntry, LogPage } from "./browser/wire.js";
import { moduleFilter, readNewest } from "./stream-pages.js";

/** How many lines a page holds at most. */
export const MAX_LOG_PAGE = 500;

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
  moduleFilter(Subject.logsPrefix, module, node);

/** Reads the query's page: at most `count` lines, oldest first, and where the next one begins. */
export async function readLogPage(
  bus: MeshBus,
  query: LogQuery,
  signal: AbortSignal,
): Promise<LogPage> {
  const count = Math.min(Math.max(1, query.count), MAX_LOG_PAGE);
  const read = await readNewest(
    bus,
    Stream.logs,
    {
      filter: logFilter(query.module, query.node),
      schema: LogLine,
      count,
      ...(query.before === undefined ? {} : { before: query.before }),
    },
    signal,
  );
  const lines = read.kept.map((m) => entryOf(m.subject, m.seq, m.value));
  const page = lines.slice(-count);
  return {
    lines: page,
    before: page[0]?.seq ?? read.end,
    more: lines.length > count || read.earlier,
    last: read.top - 1,
  };
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
