/**
 * What a cell did over time (the builds its node ran, health and restarts, each want's rule and
 * reason, the conditions about it) and the module's timeline across nodes (when each node took
 * each build). Read when opened, and again with the refresh button.
 */
import type { Have, Want } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { age, badge, emptyNote, shortBuild } from "../format.js";
import { invalidate } from "../model.js";
import { table } from "../table.js";
import type { CellHistory, ModuleTimeline, Revision } from "../wire.js";
import { healthPlot, timelinePlot } from "./plots.js";

interface HistoryState {
  module: string;
  node: string;
  cell: CellHistory | undefined;
  timeline: ModuleTimeline | undefined;
  status: "loading" | "shown" | "failed";
}

let shown: HistoryState | undefined;

async function getJson<T>(path: string): Promise<T | undefined> {
  try {
    const response = await fetch(path);
    return response.ok ? ((await response.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

/** Shows a cell's history and its module's timeline. */
export async function openHistory(module: string, node: string): Promise<void> {
  const state: HistoryState = {
    module,
    node,
    cell: undefined,
    timeline: undefined,
    status: "loading",
  };
  shown = state;
  invalidate("history");
  const q = new URLSearchParams({ module, node }).toString();
  const [cell, timeline] = await Promise.all([
    getJson<CellHistory>(`/api/history?${q}`),
    getJson<ModuleTimeline>(`/api/timeline?${new URLSearchParams({ module }).toString()}`),
  ]);
  if (shown !== state) return;
  state.cell = cell;
  state.timeline = timeline;
  state.status = cell === undefined ? "failed" : "shown";
  invalidate("history");
}

function closeHistory(): void {
  shown = undefined;
  invalidate("history");
}

const HEALTH_KIND: Record<string, string> = { healthy: "ok", starting: "info", failing: "bad" };

export function renderHistory(): void {
  const container = byId("history");
  container.hidden = shown === undefined;
  if (shown === undefined) return;
  const state = shown;
  fill(
    container,
    h(
      "div",
      { class: "panel-head" },
      h("h2", {}, `History of ${state.module} on ${state.node}`),
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          onclick: () => void openHistory(state.module, state.node),
        },
        "refresh",
      ),
      h("button", { class: "btn btn-small", type: "button", onclick: closeHistory }, "close"),
    ),
    state.status === "loading" ? emptyNote("Reading…") : null,
    state.status === "failed" ? emptyNote("The history could not be read.") : null,
    state.cell === undefined ? null : cellTables(state.cell),
    state.timeline === undefined ? null : timelineView(state.timeline),
  );
}

function cellTables(cell: CellHistory): HTMLElement {
  return h(
    "div",
    { class: "history", "data-history": `${cell.node}.${cell.module}` },
    table<Revision<Have>>({
      caption: "what ran (have), oldest first",
      rows: cell.have,
      empty: "Nothing reported yet.",
      row: (r) => ({ "data-have-revision": r.revision, "data-build": r.value?.build ?? "" }),
      columns: [
        { head: "when", class: "num", title: (r) => r.at, cell: (r) => age(r.at) },
        { head: "build", cell: (r) => h("code", {}, shortBuild(r.value?.build)) },
        {
          head: "health",
          cell: (r) =>
            r.value === undefined
              ? "removed"
              : badge(HEALTH_KIND[r.value.health] ?? "none", r.value.health),
        },
        { head: "restarts", class: "num", cell: (r) => String(r.value?.restarts ?? "—") },
        { head: "last error", class: "message", cell: (r) => r.value?.lastError ?? "" },
      ],
    }),
    table<Revision<Want>>({
      caption: "what was wanted, and why",
      rows: cell.wants,
      empty: "Never wanted here.",
      row: (r) => ({ "data-want-rule": r.value?.rule ?? "none" }),
      columns: [
        { head: "when", class: "num", title: (r) => r.at, cell: (r) => age(r.at) },
        { head: "build", cell: (r) => h("code", {}, shortBuild(r.value?.build)) },
        { head: "rule", cell: (r) => r.value?.rule ?? "no longer wanted" },
        { head: "reason", class: "message", cell: (r) => r.value?.reason ?? "" },
      ],
    }),
    table<CellHistory["conditions"][number]>({
      caption: "conditions (the last word of each)",
      rows: cell.conditions,
      empty: "No condition about it.",
      row: (c) => ({ "data-history-condition": c.name, "data-resolved": String(c.resolved) }),
      columns: [
        { head: "when", class: "num", title: (c) => c.at, cell: (c) => age(c.at) },
        { head: "condition", cell: (c) => c.name },
        {
          head: "state",
          cell: (c) =>
            c.resolved
              ? badge("ok", "resolved")
              : badge(c.level === "error" ? "bad" : "warn", "open"),
        },
        { head: "message", class: "message", cell: (c) => c.message },
      ],
    }),
  );
}

function timelineView(timeline: ModuleTimeline): HTMLElement {
  return h(
    "div",
    { class: "timeline", id: "timeline" },
    h("h3", {}, `When each node took each build of ${timeline.module}`),
    timeline.nodes.length === 0
      ? emptyNote("No node has reported it yet.")
      : timelinePlot(timeline),
    timeline.health.length === 0
      ? null
      : h(
          "div",
          {},
          h("h3", {}, `Health of ${timeline.module} over time`),
          healthPlot(timeline.module, timeline.health),
        ),
    timeline.leftOut === 0
      ? null
      : h("p", { class: "muted" }, `and ${timeline.leftOut} more nodes`),
  );
}
