/**
 * What `mesh status` shows of a large fleet: a summary whose size grows with the modules, never
 * with the nodes (nodes by state, cells by state, one line per module), and pages of the long
 * lists (nodes, cells, differences, what needs attention), narrowed to a node or a module. A fleet
 * of 10,000 nodes fits in one screen and one response of bounded size.
 */
import { fleetCounts, type CellReason, type FleetView } from "@mesh/core";

/** How many rows of each list status shows unless asked for more (`--limit`). */
export const STATUS_LIMIT = { text: 50, json: 500 } as const;

export interface StatusQuery {
  /** Only this node's rows. */
  readonly node?: string;
  /** Only this module's rows. */
  readonly module?: string;
  /** The first row of each list to show (0-based). */
  readonly from: number;
  /** The most rows of each list to show. */
  readonly limit: number;
}

export interface ModuleSummary {
  readonly module: string;
  /** Assigned (node, module) cells of the module. */
  readonly assigned: number;
  readonly healthy: number;
  readonly starting: number;
  readonly notRunning: number;
}

export interface StatusSummary {
  readonly nodes: {
    readonly total: number;
    readonly present: number;
    readonly gone: number;
    readonly never: number;
  };
  readonly cells: {
    readonly assigned: number;
    readonly healthy: number;
    readonly starting: number;
    readonly notRunning: number;
    readonly leaving: number;
  };
  readonly modules: ModuleSummary[];
}

/** For each list: how many rows there are (after narrowing) and which ones were shown. */
export interface StatusPage {
  readonly from: number;
  readonly limit: number;
  readonly node?: string;
  readonly module?: string;
  readonly totals: {
    readonly nodes: number;
    readonly modules: number;
    readonly differences: number;
    readonly attention: number;
  };
}

/** The summary of the whole fleet, whatever the query narrows (core's count, as the assigner's summary has it). */
export function summarize(fleet: FleetView): StatusSummary {
  return fleetCounts(fleet);
}

/** Whether a row of (node, module) is inside the query's narrowing. */
export function narrowed(query: StatusQuery, node: string, module?: string): boolean {
  return (
    (query.node === undefined || node === query.node) &&
    (query.module === undefined || module === undefined || module === query.module)
  );
}

/** What a status says of its page: the query's window and narrowing, and each list's total. */
export function pageInfo(query: StatusQuery, totals: StatusPage["totals"]): StatusPage {
  return {
    from: query.from,
    limit: query.limit,
    ...(query.node === undefined ? {} : { node: query.node }),
    ...(query.module === undefined ? {} : { module: query.module }),
    totals,
  };
}

/** The page of `rows` the query asks for. */
export function pageOf<T>(rows: readonly T[], query: StatusQuery): T[] {
  return rows.slice(query.from, query.from + query.limit);
}

/** The attention cells inside the query's narrowing. */
export function attentionOf(fleet: FleetView, query: StatusQuery): CellReason[] {
  return fleet.attention.cells.filter((c) => narrowed(query, c.node, c.module));
}

/** The line under a list that was cut: how many more there are and how to see them. */
export function moreLine(shown: number, total: number, query: StatusQuery): string | undefined {
  if (query.from + shown >= total) return undefined;
  const rest = total - query.from - shown;
  return `  … ${rest} more of ${total}: \`mesh status --from ${query.from + shown}\`, or narrow with --node NAME / --module NAME`;
}
