/**
 * The page: keeps a model of the mesh fed by the server's event stream (the whole state first,
 * then each change) and re-renders the sections a change touches. Answers and tool calls are
 * POSTs carrying the view's own header.
 *
 * model (the entries, the fleet's summary, the grid's page, the page's own state) · stream (the
 * event stream) · api (the other requests) · format · table · sections/ (one file per part of
 * the page).
 */
import { loadGrid, loadSession, loadTools } from "./api.js";
import { byId } from "./dom.js";
import { invalidate, setRenderers } from "./model.js";
import { renderActions } from "./sections/actions.js";
import { renderAsks } from "./sections/asks.js";
import { renderBuilds } from "./sections/builds.js";
import { renderConditions } from "./sections/conditions.js";
import { renderDetail } from "./sections/detail.js";
import { renderDifferences } from "./sections/differences.js";
import { initGridControls, renderGrid } from "./sections/grid.js";
import { renderHistory } from "./sections/history.js";
import { renderLogs } from "./sections/logs.js";
import { renderRollouts } from "./sections/rollouts.js";
import { renderNodes } from "./sections/nodes.js";
import { renderSummary } from "./sections/summary.js";
import { renderToolCalls } from "./sections/tool-calls.js";
import { renderTools } from "./sections/tools.js";
import { connect } from "./stream.js";

setRenderers({
  summary: renderSummary,
  asks: renderAsks,
  nodes: renderNodes,
  grid: renderGrid,
  detail: renderDetail,
  differences: renderDifferences,
  conditions: renderConditions,
  builds: renderBuilds,
  tools: renderTools,
  logs: renderLogs,
  history: renderHistory,
  toolCalls: renderToolCalls,
  actions: renderActions,
  rollouts: renderRollouts,
});
byId("tools-refresh").addEventListener("click", () => void loadTools());
initGridControls();
void loadSession();
connect();
// Heartbeat ages move with time, not with changes; the server pushes no heartbeat that changes
// nothing else, so the grid's page is asked for again now and then.
window.setInterval(() => invalidate("nodes", "grid"), 5_000);
window.setInterval(() => void loadGrid(), 15_000);
