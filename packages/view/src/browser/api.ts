/**
 * What the page asks its server besides the event stream: the grid's pages, tools, build logs,
 * the rollouts' canaries, and the two POSTs.
 */
import { GRID_PAGE_NODES, invalidate, model, values } from "./model.js";
import {
  CSRF_HEADER,
  CSRF_VALUE,
  LOGOUT_PATH,
  SESSION_CSRF_HEADER,
  Source,
  type CallResult,
  type GridPage,
  type RolloutCanaries,
  type SessionInfo,
  type ToolEntry,
} from "./wire.js";

/** A POST with the view's header; a failure to reach the server is an UNREACHABLE result. */
export async function post(path: string, body: unknown): Promise<CallResult> {
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        [CSRF_HEADER]: CSRF_VALUE,
        [SESSION_CSRF_HEADER]: model.session?.csrf ?? "",
      },
      body: JSON.stringify(body),
    });
    return (await response.json()) as CallResult;
  } catch (error) {
    return { ok: false, error: { code: "UNREACHABLE", message: (error as Error).message } };
  }
}

/** Asks the server which tools are served (discovery takes a moment) and shows them. */
export async function loadTools(): Promise<void> {
  model.toolsState = "loading";
  invalidate("tools");
  try {
    const response = await fetch("/api/tools", { headers: { accept: "application/json" } });
    if (!response.ok) throw new Error(`${response.status}`);
    model.tools = (await response.json()) as ToolEntry[];
    model.toolsState = "idle";
  } catch {
    model.toolsState = "failed";
  }
  invalidate("tools");
}

let toolTimer = 0;
/** Lists the tools again shortly: a burst of changes leads to one discovery. */
export function scheduleToolRefresh(): void {
  window.clearTimeout(toolTimer);
  toolTimer = window.setTimeout(() => void loadTools(), 1_500);
}

/** A build's log, or why it could not be read. */
export async function buildLog(key: string): Promise<string> {
  const response = await fetch(`/api/build-log?key=${encodeURIComponent(key)}`);
  return response.ok ? await response.text() : `the log could not be read (${response.status})`;
}

let gridLoading = false;
let gridAgain = false;

/**
 * Asks for the grid's page as the filter, the switch and the pager say. While one is on its way,
 * further calls make one more after it, not one each.
 */
export async function loadGrid(): Promise<void> {
  if (gridLoading) {
    gridAgain = true;
    return;
  }
  gridLoading = true;
  try {
    do {
      gridAgain = false;
      const query = new URLSearchParams({
        from: String(model.gridFrom),
        count: String(GRID_PAGE_NODES),
        filter: model.gridFilter.trim().toLowerCase(),
        attention: model.problemsOnly ? "1" : "0",
      });
      const response = await fetch(`/api/grid?${query.toString()}`);
      if (response.ok) model.grid = (await response.json()) as GridPage;
      invalidate("grid", "nodes", "detail");
      // The fleet shrank under the page being shown: go to the last page there is.
      const matched = model.grid?.matched.nodes ?? 0;
      if (model.gridFrom > 0 && model.gridFrom >= matched) {
        model.gridFrom = Math.max(0, Math.floor((matched - 1) / GRID_PAGE_NODES) * GRID_PAGE_NODES);
        gridAgain = true;
      }
    } while (gridAgain);
  } catch {
    // The event stream's reconnect brings a new state, and with it a new page.
  } finally {
    gridLoading = false;
  }
}

let canariesLoading = false;
let canariesAgain = false;

/**
 * Asks how each rollout's canary runs the build, when there is a rollout: on the first state, a
 * rollout's change and the fleet's. While one is on its way, further calls make one more after it.
 */
export async function loadCanaries(): Promise<void> {
  if (values(Source.rollouts).size === 0) return;
  if (canariesLoading) {
    canariesAgain = true;
    return;
  }
  canariesLoading = true;
  try {
    do {
      canariesAgain = false;
      const response = await fetch("/api/rollout-canaries");
      if (response.ok) model.canaries = (await response.json()) as RolloutCanaries;
      invalidate("rollouts");
    } while (canariesAgain);
  } catch {
    // The next change asks again.
  } finally {
    canariesLoading = false;
  }
}

/** Who the page acts as, and its session's CSRF token; shown in the header. */
export async function loadSession(): Promise<void> {
  try {
    const response = await fetch("/api/session");
    if (response.ok) model.session = (await response.json()) as SessionInfo;
  } catch {
    // Without it a POST is refused by a view with logins, and says so.
  }
  const who = document.getElementById("who");
  if (who !== null && model.session !== undefined) {
    who.textContent = `${model.session.who}${model.session.access === "read" ? " · read-only" : ""}`;
    who.dataset["access"] = model.session.access;
  }
  const logout = document.getElementById("logout");
  if (logout !== null && model.session?.login === true) {
    logout.hidden = false;
    logout.onclick = () => void logOut();
  }
}

/**
 * Ends the session on the server, then loads the page again, which the view now refuses until a
 * new login. The page stays as it is when the server did not end it, and says why.
 */
async function logOut(): Promise<void> {
  const result = await post(LOGOUT_PATH, {});
  if (result.ok) {
    window.location.assign("/");
    return;
  }
  const who = document.getElementById("who");
  if (who !== null) who.textContent = `could not log out: ${result.error.message}`;
}
