/** What the page asks its server besides the event stream: tools, build logs, and the two POSTs. */
import { invalidate, model } from "./model.js";
import { CSRF_HEADER, CSRF_VALUE, type CallResult, type ToolEntry } from "./wire.js";

/** A POST with the view's header; a failure to reach the server is an UNREACHABLE result. */
export async function post(path: string, body: unknown): Promise<CallResult> {
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", [CSRF_HEADER]: CSRF_VALUE },
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
