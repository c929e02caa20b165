/**
 * The fleet's summary (decision 0090): what `mesh status` and the view's first paint show of the
 * whole fleet, computed from the one read model (`readFleet`) by the assigner and kept under one
 * key, so a reader gets it in one get. Its size grows with the modules and the bound of its
 * `first` lists, never with the nodes. Pure: the state and its clock come in.
 */
import type { Summary, SummaryCell } from "@mesh/protocol";
import { readFleet, type FleetView } from "./read-model.js";
import type { FleetState } from "./state.js";

/** How many of each list (attention, leaving, differences) a summary carries; the rest are counted. */
export const SUMMARY_FIRST = 100;

export interface SummaryOptions {
  /** How many of each list it carries (default {@link SUMMARY_FIRST}). */
  readonly first?: number;
}

/** The summary of the fleet as `state` holds it at `state.now`. */
export function summarizeFleet(state: FleetState, options: SummaryOptions = {}): Summary {
  const first = options.first ?? SUMMARY_FIRST;
  const fleet = readFleet(state);
  const troubledNodes = new Set(fleet.attention.nodes.map((n) => n.node));
  for (const [node, verdict] of state.compositions) {
    if (verdict.verdict === "refused") troubledNodes.add(node);
  }
  const differenceKeys = [...state.differences.keys()].sort();
  return {
    at: new Date(state.now).toISOString(),
    ...counts(fleet),
    attention: {
      cells: fleet.attention.cells.length,
      nodes: troubledNodes.size,
      first: fleet.attention.cells.slice(0, first).map(summaryCell),
    },
    leaving: { first: fleet.leaving.slice(0, first).map(({ node, module }) => ({ node, module })) },
    differences: {
      total: differenceKeys.length,
      first: differenceKeys.slice(0, first).flatMap((key) => {
        const difference = state.differences.get(key);
        return difference === undefined ? [] : [{ key, difference }];
      }),
    },
  };
}

/** Nodes by state, cells by state, and one line per module. */
export function counts(fleet: FleetView): Pick<Summary, "nodes" | "cells" | "modules"> {
  const nodes = { total: fleet.nodes.length, present: 0, gone: 0, never: 0 };
  for (const n of fleet.nodes) nodes[n.state] += 1;
  const cells = {
    assigned: fleet.cells.length,
    healthy: 0,
    starting: 0,
    notRunning: 0,
    leaving: fleet.leaving.length,
  };
  type Line = { -readonly [K in keyof Summary["modules"][number]]: Summary["modules"][number][K] };
  const byModule = new Map<string, Line>();
  for (const c of fleet.cells) {
    let m = byModule.get(c.module);
    if (m === undefined) {
      m = { module: c.module, assigned: 0, healthy: 0, starting: 0, notRunning: 0 };
      byModule.set(c.module, m);
    }
    const state = c.state === "not-running" ? "notRunning" : c.state;
    m.assigned += 1;
    m[state] += 1;
    cells[state] += 1;
  }
  const modules = [...byModule.values()].sort((a, b) => (a.module < b.module ? -1 : 1));
  return { nodes, cells, modules };
}

/** A summary without its time: what tells whether it changed. */
export function summaryContent(summary: Summary): Omit<Summary, "at"> {
  const { at: _at, ...rest } = summary;
  return rest;
}

/** A cell as the summary carries it: its reason's fields only. */
export function summaryCell(c: SummaryCell): SummaryCell {
  return {
    node: c.node,
    module: c.module,
    state: c.state,
    reason: c.reason,
    ...(c.fix === undefined ? {} : { fix: c.fix }),
  };
}
