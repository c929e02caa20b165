/**
 * What `mesh status` reports, as its reader and its printer share it: the report's shape and one
 * cell as status shows it (also what `mesh wants` and `mesh differences` read).
 */
import type { CellReason, CellState, FleetState } from "@mesh/core";
import type { Ask, Condition, Difference, Have, Presence, Want } from "@mesh/protocol";
import type { StatusPage, StatusSummary } from "./status-page.js";

/** How many conditions status shows (`mesh conditions` shows them all). */
export const RECENT_CONDITIONS = 10;

/** Where a report's numbers come from: the assigner's summary, or every bucket read whole. */
export type StatusSource =
  | { readonly kind: "summary"; readonly at: string }
  | { readonly kind: "every-bucket"; readonly why: string };

export interface StatusNode {
  readonly node: string;
  readonly present: boolean;
  /** The last heartbeat, or null for a node known only from its wants or haves. */
  readonly heartbeat: string | null;
  /**
   * Since when it is in its state: the node has no start time of its own, so both present and
   * gone date from the last heartbeat (gone: last heard from then).
   */
  readonly since: string | null;
  readonly facts: Presence["facts"] | null;
}

export interface StatusCell {
  readonly node: string;
  readonly module: string;
  readonly want: Pick<Want, "build" | "rule" | "reason"> | null;
  readonly have: Pick<Have, "build" | "health" | "restarts" | "since" | "lastError"> | null;
  /** The have's health, or `absent` when nothing runs there yet. */
  readonly health: Have["health"] | "absent";
  readonly differs: boolean;
  /** The read model's state; `leaving` for a cell nothing assigns any more. */
  readonly state: CellState | "leaving";
  readonly reason: string;
  /** The command that fixes it, for every state but healthy. */
  readonly fix?: string;
}

export interface StatusReport {
  readonly at: string;
  readonly nodes: StatusNode[];
  readonly modules: StatusCell[];
  readonly differences: Array<{ node: string; module: string } & Difference>;
  readonly asks: Ask[];
  readonly conditions: Array<Condition & { subject: string }>;
  /** Every assigned cell that is not running, with its reason and fix (a page of them). */
  readonly attention: CellReason[];
  /** The whole fleet in numbers, and one line per module: its size does not grow with nodes. */
  readonly summary: StatusSummary;
  /** Which rows of each list were shown, of how many (nodes, modules, differences, attention). */
  readonly page: StatusPage;
  readonly source: StatusSource;
}

/** One (node, module) as status shows it: want, have, and the read model's state. */
export function statusCell(
  key: string,
  node: string,
  module: string,
  state: FleetState,
  reasons: ReadonlyMap<string, CellReason>,
): StatusCell {
  const w = state.wants.get(key);
  const h = state.have.get(key);
  return {
    node,
    module,
    want: w === undefined ? null : { build: w.build, rule: w.rule, reason: w.reason },
    have:
      h === undefined
        ? null
        : {
            ...(h.build === undefined ? {} : { build: h.build }),
            health: h.health,
            restarts: h.restarts,
            since: h.since,
            ...(h.lastError === undefined ? {} : { lastError: h.lastError }),
          },
    health: h?.health ?? "absent",
    differs: state.differences.has(key),
    ...cellState(reasons.get(key)),
  };
}

/** A cell's state from the read model; a cell it does not list is assigned nowhere any more. */
function cellState(c: CellReason | undefined): Pick<StatusCell, "state" | "reason" | "fix"> {
  if (c === undefined) {
    return { state: "leaving", reason: "not assigned here any more: the mesh takes it away" };
  }
  return { state: c.state, reason: c.reason, ...(c.fix === undefined ? {} : { fix: c.fix }) };
}
