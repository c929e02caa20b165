/**
 * A module's logs, on one node or on every node (interleaved by time, as the stream stored
 * them): the last page first, older pages on demand, then each new line live. Search narrows the
 * lines loaded; the last error stands out.
 */
import { byId, fill, h } from "../dom.js";
import { clock, emptyNote } from "../format.js";
import { invalidate } from "../model.js";
import { LOG_LINE_EVENT, type LogEntry, type LogPage } from "../wire.js";

/** A page of lines asked for at a time. */
const PAGE_LINES = 200;
/** The most lines the page keeps; older ones fall off as new ones come. */
const KEPT_LINES = 5_000;
/** A line that reads as an error, besides everything on stderr. */
const ERROR_WORDS = /\b(error|fatal|panic|exception|uncaught)\b/i;

interface LogsState {
  module: string;
  node: string | undefined;
  lines: LogEntry[];
  before: number;
  more: boolean;
  search: string;
  status: "loading" | "live" | "failed" | "closed";
  tail: EventSource | undefined;
}

let logs: LogsState | undefined;

const query = (params: Record<string, string | number | undefined>): string =>
  new URLSearchParams(
    Object.entries(params).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])),
  ).toString();

/** Shows a module's logs (one node's, or every node's), following new lines. */
export async function openLogs(module: string, node: string | undefined): Promise<void> {
  closeLogs();
  const state: LogsState = {
    module,
    node,
    lines: [],
    before: 0,
    more: false,
    search: "",
    status: "loading",
    tail: undefined,
  };
  logs = state;
  invalidate("logs");
  const page = await fetchPage(state, undefined);
  if (logs !== state) return;
  if (page === undefined) {
    state.status = "failed";
    invalidate("logs");
    return;
  }
  state.lines = [...page.lines];
  state.before = page.before;
  state.more = page.more;
  state.status = "live";
  const tail = new EventSource(`/api/log-tail?${query({ module, node, after: page.last })}`);
  tail.addEventListener(LOG_LINE_EVENT, (event) => {
    const line = JSON.parse((event as MessageEvent<string>).data) as LogEntry;
    // A reconnected tail starts again from the first line's point: keep each sequence once.
    if (state.lines.length > 0 && line.seq <= (state.lines.at(-1)?.seq ?? 0)) return;
    state.lines.push(line);
    if (state.lines.length > KEPT_LINES) state.lines.splice(0, state.lines.length - KEPT_LINES);
    invalidate("logs");
  });
  state.tail = tail;
  invalidate("logs");
}

export function closeLogs(): void {
  logs?.tail?.close();
  logs = undefined;
  invalidate("logs");
}

async function fetchPage(
  state: LogsState,
  before: number | undefined,
): Promise<LogPage | undefined> {
  try {
    const q = query({ module: state.module, node: state.node, before, count: PAGE_LINES });
    const response = await fetch(`/api/logs?${q}`);
    return response.ok ? ((await response.json()) as LogPage) : undefined;
  } catch {
    return undefined;
  }
}

async function older(state: LogsState): Promise<void> {
  const page = await fetchPage(state, state.before);
  if (page === undefined || logs !== state) return;
  state.lines = [...page.lines, ...state.lines];
  state.before = page.before;
  state.more = page.more;
  invalidate("logs");
}

const isError = (line: LogEntry): boolean =>
  line.stream === "stderr" || ERROR_WORDS.test(line.line);

export function renderLogs(): void {
  const container = byId("logs");
  container.hidden = logs === undefined;
  if (logs === undefined) return;
  const state = logs;
  const needle = state.search.trim().toLowerCase();
  const shown = needle === "" ? state.lines : state.lines.filter((l) => matches(l, needle));
  const lastError = state.lines.findLast(isError);
  const search = searchBox(state);
  const hadFocus = document.activeElement?.id === "log-search";
  fill(
    container,
    h(
      "div",
      { class: "panel-head" },
      h(
        "h2",
        {},
        `Logs of ${state.module} `,
        h(
          "span",
          { class: "muted" },
          state.node === undefined ? "on every node" : `on ${state.node}`,
        ),
        " ",
        h("span", { class: "count", id: "log-count" }, shownCount(shown.length, state, needle)),
      ),
      search,
      h("span", { class: "muted", "data-log-status": state.status }, state.status),
      h("button", { class: "btn btn-small", type: "button", onclick: closeLogs }, "close"),
    ),
    lastError === undefined
      ? null
      : h(
          "p",
          { class: "log-last-error", id: "log-last-error" },
          `last error ${clock(lastError.at)} on ${lastError.node}: `,
          h("code", {}, lastError.line),
        ),
    state.more ? olderButton(state) : null,
    state.status === "failed"
      ? emptyNote("The logs could not be read; close and open them again.")
      : shown.length === 0
        ? emptyNote(
            state.status === "loading"
              ? "Reading…"
              : needle === ""
                ? "No line kept yet; new ones show here."
                : "No loaded line matches.",
          )
        : h(
            "div",
            { class: "log-lines", id: "log-lines" },
            ...shown.map((l) => lineRow(l, l === lastError)),
          ),
  );
  if (hadFocus) {
    search.focus();
    search.setSelectionRange(search.value.length, search.value.length);
  }
  const box = document.getElementById("log-lines");
  if (box !== null) box.scrollTop = box.scrollHeight;
}

const matches = (line: LogEntry, needle: string): boolean =>
  line.line.toLowerCase().includes(needle) || line.node.toLowerCase().includes(needle);

const shownCount = (shown: number, state: LogsState, needle: string): string =>
  needle === "" ? `${state.lines.length} lines` : `${shown} of ${state.lines.length} lines`;

function lineRow(line: LogEntry, lastError: boolean): HTMLElement {
  const classes = ["log-line", isError(line) ? "log-error" : "", lastError ? "log-last" : ""];
  return h(
    "div",
    {
      class: classes.filter((c) => c !== "").join(" "),
      "data-seq": line.seq,
      "data-node": line.node,
    },
    h("span", { class: "log-at", title: line.at }, clock(line.at)),
    h("span", { class: "log-node" }, line.node),
    h("span", { class: "log-process" }, line.process),
    h("span", { class: "log-text" }, line.line),
  );
}

function searchBox(state: LogsState): HTMLInputElement {
  return h("input", {
    id: "log-search",
    type: "search",
    placeholder: "search the loaded lines",
    "aria-label": "search the loaded lines",
    value: state.search,
    oninput: (event: Event) => {
      state.search = (event.target as HTMLInputElement).value;
      invalidate("logs");
    },
  });
}

const olderButton = (state: LogsState): HTMLElement =>
  h(
    "button",
    { class: "btn btn-small", id: "log-older", type: "button", onclick: () => void older(state) },
    "older lines",
  );
