/**
 * A module's tool calls and errors per second over the last half hour (decision 0172), on one
 * node or every node, one plot per tool; read when opened and again every 5 s while it is open,
 * as the runtimes file their windows.
 */
import { byId, fill, h } from "../dom.js";
import { emptyNote } from "../format.js";
import { invalidate } from "../model.js";
import type { ToolStatsSeries } from "../wire.js";
import { toolCallsPlot } from "./plots.js";

const MINUTES = 30;
const REFRESH_MS = 5_000;

interface Shown {
  readonly module: string;
  readonly node: string | undefined;
  series: ToolStatsSeries | undefined;
  status: "loading" | "shown" | "failed";
  timer: number;
}

let shown: Shown | undefined;

/** Shows the module's tool calls (on `node`, or every node) and keeps them fresh. */
export function openToolCalls(module: string, node: string | undefined): void {
  closeToolCalls();
  const state: Shown = { module, node, series: undefined, status: "loading", timer: 0 };
  state.timer = window.setInterval(() => void load(state), REFRESH_MS);
  shown = state;
  invalidate("toolCalls");
  void load(state);
}

function closeToolCalls(): void {
  if (shown !== undefined) window.clearInterval(shown.timer);
  shown = undefined;
  invalidate("toolCalls");
}

async function load(state: Shown): Promise<void> {
  const query = new URLSearchParams({
    module: state.module,
    minutes: String(MINUTES),
    ...(state.node === undefined ? {} : { node: state.node }),
  });
  let series: ToolStatsSeries | undefined;
  try {
    const response = await fetch(`/api/tool-stats?${query.toString()}`);
    series = response.ok ? ((await response.json()) as ToolStatsSeries) : undefined;
  } catch {
    series = undefined;
  }
  if (shown !== state) return;
  // A failed refresh keeps what was shown, and says so.
  state.series = series ?? state.series;
  state.status = series === undefined ? "failed" : "shown";
  invalidate("toolCalls");
}

export function renderToolCalls(): void {
  const container = byId("tool-calls");
  container.hidden = shown === undefined;
  if (shown === undefined) return;
  const state = shown;
  const where = state.node === undefined ? "every node" : state.node;
  const series = state.series;
  fill(
    container,
    h(
      "div",
      { class: "panel-head" },
      h("h2", {}, `Tool calls of ${state.module} on ${where}, the last ${MINUTES} minutes`),
      h("button", { class: "btn btn-small", type: "button", onclick: closeToolCalls }, "close"),
    ),
    state.status === "loading" ? emptyNote("Reading…") : null,
    state.status === "failed" ? emptyNote("The tool calls could not be read.") : null,
    series === undefined
      ? null
      : h(
          "div",
          { "data-tool-calls": `${where}.${state.module}` },
          series.tools.length === 0
            ? emptyNote(`No call of ${state.module}'s tools was counted in this time.`)
            : null,
          ...series.tools.map((tool) =>
            h(
              "div",
              { class: "tool-calls" },
              h("h3", {}, h("code", {}, tool.tool)),
              toolCallsPlot(series, tool),
            ),
          ),
          h(
            "p",
            { class: "muted" },
            `per ${Math.round(series.stepMs / 1000)} s, from ${series.windows} windows the runtimes filed`,
            series.truncated
              ? "; more were filed than one look reads, so the oldest are left out"
              : "",
          ),
        ),
  );
}
