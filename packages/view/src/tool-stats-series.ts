/**
 * A module's tool calls for the page (decision 0172): the runtimes' windows of the last minutes
 * read newest first from `mesh-tool-stats` (never the whole stream: at most
 * MAX_TOOL_STATS_WINDOWS of them), summed per tool into TOOL_STATS_STEPS equal steps, so what the
 * page gets is bounded by its tools, not by the fleet or the time.
 */
import { Stream, Subject, ToolStats } from "@mesh/protocol";
import type { MeshBus } from "@mesh/bus";
import { TOOL_STATS_STEPS, type ToolSeries, type ToolStatsSeries } from "./browser/wire.js";
import { moduleFilter, readNewest } from "./stream-pages.js";

/** The most windows one answer reads: an hour of 5 s windows on about seven nodes. */
export const MAX_TOOL_STATS_WINDOWS = 5_000;
/** The longest time asked for: the stream keeps a day (decision 0172). */
export const MAX_TOOL_STATS_MINUTES = 24 * 60;

export interface ToolStatsQuery {
  readonly module: string;
  /** One node's calls; every node's summed when absent. */
  readonly node?: string;
  readonly minutes: number;
  /** The end of the time shown (ms since the epoch). */
  readonly now: number;
}

export async function readToolStats(
  bus: MeshBus,
  query: ToolStatsQuery,
  signal: AbortSignal,
): Promise<ToolStatsSeries> {
  const minutes = Math.min(Math.max(1, query.minutes), MAX_TOOL_STATS_MINUTES);
  const from = query.now - minutes * 60_000;
  const read = await readNewest(
    bus,
    Stream.toolStats,
    {
      filter: moduleFilter(Subject.toolStatsPrefix, query.module, query.node),
      schema: ToolStats,
      count: MAX_TOOL_STATS_WINDOWS,
      since: from,
    },
    signal,
  );
  const inTime = read.kept.map((m) => m.value).filter((w) => Date.parse(w.to) > from);
  const windows = inTime.slice(-MAX_TOOL_STATS_WINDOWS);
  // Windows in the time that were not read: some left out here, or earlier ones not reached.
  const oldest = read.kept[0];
  const truncated =
    windows.length < inTime.length ||
    (read.earlier && oldest !== undefined && oldest.time.getTime() >= from);
  return {
    ...seriesOf(windows, { from, to: query.now, steps: TOOL_STATS_STEPS }),
    module: query.module,
    ...(query.node === undefined ? {} : { node: query.node }),
    truncated,
  };
}

/**
 * The windows summed per tool into `steps` equal steps from `from` to `to`: a window counts in
 * the step its end falls in (a window is 5 s, a step at least a second).
 */
export function seriesOf(
  windows: readonly ToolStats[],
  range: { readonly from: number; readonly to: number; readonly steps: number },
): Omit<ToolStatsSeries, "module" | "node" | "truncated"> {
  const stepMs = Math.max(1, Math.ceil((range.to - range.from) / range.steps));
  const byTool = new Map<
    string,
    { calls: number[]; errors: number[]; codes: Record<string, number> }
  >();
  let read = 0;
  for (const window of windows) {
    const end = Date.parse(window.to);
    if (end <= range.from || end > range.to + stepMs) continue;
    read += 1;
    const step = Math.min(
      range.steps - 1,
      Math.max(0, Math.floor((end - 1 - range.from) / stepMs)),
    );
    for (const [tool, counts] of Object.entries(window.tools)) {
      let series = byTool.get(tool);
      if (series === undefined) {
        series = {
          calls: new Array<number>(range.steps).fill(0),
          errors: new Array<number>(range.steps).fill(0),
          codes: {},
        };
        byTool.set(tool, series);
      }
      series.calls[step] = (series.calls[step] ?? 0) + counts.calls;
      series.errors[step] = (series.errors[step] ?? 0) + counts.errors;
      for (const [code, n] of Object.entries(counts.codes)) {
        series.codes[code] = (series.codes[code] ?? 0) + n;
      }
    }
  }
  const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
  const tools: ToolSeries[] = [...byTool]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([tool, s]) => ({
      tool,
      calls: s.calls,
      errors: s.errors,
      totalCalls: sum(s.calls),
      totalErrors: sum(s.errors),
      codes: s.codes,
    }));
  return {
    from: new Date(range.from).toISOString(),
    to: new Date(range.to).toISOString(),
    stepMs,
    tools,
    windows: read,
  };
}
