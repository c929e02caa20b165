/**
 * The page: keeps a model of the mesh fed by the server's event stream (the whole state first,
 * then each change) and re-renders the sections a change touches. Answers and tool calls are
 * POSTs carrying the view's own header.
 */
import type {
  Answer,
  Ask,
  CompositionVerdict,
  Condition,
  Difference,
  Have,
  Presence,
  Put,
  Want,
} from "@mesh/protocol";
import { byId, fill, h } from "./dom.js";
import { schemaForm, type SchemaForm } from "./schema-form.js";
import {
  CSRF_HEADER,
  CSRF_VALUE,
  PRESENCE_STALE_MS,
  Source,
  ViewEvent,
  type BuildSummary,
  type BusState,
  type CallResult,
  type Change,
  type Snapshot,
  type SourceProblem,
  type ToolEntry,
} from "./wire.js";

// ---------------------------------------------------------------------------------------------
// The model

const model = {
  entries: new Map<Source, Map<string, unknown>>(
    Object.values(Source).map((s) => [s, new Map<string, unknown>()]),
  ),
  problems: new Map<Source, string>(),
  bus: "connected" as BusState,
  /** The page's connection to its server. */
  link: "connecting" as "connecting" | "live" | "lost",
  /** Server clock minus ours, so heartbeat ages do not depend on this machine's clock. */
  skewMs: 0,
  tools: [] as ToolEntry[],
  toolsState: "idle" as "idle" | "loading" | "failed",
  selected: undefined as { node: string; module: string } | undefined,
  openLog: undefined as { key: string; text: string } | undefined,
  lastChange: undefined as Date | undefined,
  gridFilter: "",
  problemsOnly: false,
};

const values = <T>(source: Source): Map<string, T> =>
  (model.entries.get(source) as Map<string, T> | undefined) ?? new Map<string, T>();

const now = (): number => Date.now() + model.skewMs;

/** Which sections each source feeds: a change re-renders only those. */
const SECTIONS_OF: Record<Source, readonly Section[]> = {
  [Source.modules]: ["grid", "summary"],
  [Source.builds]: ["builds", "grid"],
  [Source.assignments]: ["grid"],
  [Source.puts]: ["grid"],
  [Source.presence]: ["nodes", "grid", "summary"],
  [Source.wants]: ["grid", "detail"],
  [Source.have]: ["grid", "detail", "summary"],
  [Source.compositions]: ["nodes", "grid"],
  [Source.differences]: ["grid", "differences", "detail", "summary"],
  [Source.asks]: ["asks", "summary"],
  [Source.answers]: ["asks", "summary"],
  [Source.conditions]: ["conditions"],
};

type Section =
  | "summary"
  | "asks"
  | "nodes"
  | "grid"
  | "detail"
  | "differences"
  | "conditions"
  | "builds"
  | "tools";

const ALL_SECTIONS: readonly Section[] = [
  "summary",
  "asks",
  "nodes",
  "grid",
  "detail",
  "differences",
  "conditions",
  "builds",
  "tools",
];

const dirty = new Set<Section>();
let frame = 0;

function invalidate(...sections: readonly Section[]): void {
  for (const s of sections) dirty.add(s);
  if (frame === 0) frame = requestAnimationFrame(renderDirty);
}

function renderDirty(): void {
  frame = 0;
  const sections = [...dirty];
  dirty.clear();
  for (const section of sections) RENDER[section]();
  // Scripts and tests may rely on this: the first whole state is on the page, not just received.
  if (model.link === "live") document.body.dataset["ready"] = "true";
}

// ---------------------------------------------------------------------------------------------
// The event stream

function connect(): void {
  const events = new EventSource("/api/events");
  events.addEventListener(ViewEvent.snapshot, (event) => {
    const snapshot = JSON.parse((event as MessageEvent<string>).data) as Snapshot;
    model.skewMs = Date.parse(snapshot.at) - Date.now();
    for (const source of Object.values(Source)) {
      model.entries.set(source, new Map(Object.entries(snapshot.entries[source] ?? {})));
    }
    model.problems = new Map(Object.entries(snapshot.problems) as Array<[Source, string]>);
    model.bus = snapshot.bus;
    model.link = "live";
    model.lastChange = new Date();
    invalidate(...ALL_SECTIONS);
    void loadTools();
  });
  events.addEventListener(ViewEvent.change, (event) => {
    const change = JSON.parse((event as MessageEvent<string>).data) as Change;
    const map = model.entries.get(change.source);
    if (map === undefined) return;
    if (change.value === undefined) map.delete(change.key);
    else map.set(change.key, change.value);
    model.lastChange = new Date();
    invalidate(...SECTIONS_OF[change.source]);
    // A module starting or stopping somewhere may add or remove its tools.
    if (change.source === Source.have) scheduleToolRefresh();
  });
  events.addEventListener(ViewEvent.problem, (event) => {
    const problem = JSON.parse((event as MessageEvent<string>).data) as SourceProblem;
    if (problem.problem === undefined) model.problems.delete(problem.source);
    else model.problems.set(problem.source, problem.problem);
    invalidate("summary");
  });
  events.addEventListener(ViewEvent.bus, (event) => {
    model.bus = (JSON.parse((event as MessageEvent<string>).data) as { bus: BusState }).bus;
    invalidate("summary");
  });
  events.addEventListener("error", () => {
    // EventSource reconnects by itself and the server sends the whole state again.
    model.link = events.readyState === EventSource.CLOSED ? "lost" : "connecting";
    invalidate("summary");
  });
}

let toolTimer = 0;
function scheduleToolRefresh(): void {
  window.clearTimeout(toolTimer);
  toolTimer = window.setTimeout(() => void loadTools(), 1_500);
}

async function loadTools(): Promise<void> {
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

async function post(path: string, body: unknown): Promise<CallResult> {
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

// ---------------------------------------------------------------------------------------------
// What the sections share

const HEALTH_LABEL: Record<string, string> = {
  healthy: "healthy",
  starting: "starting",
  failing: "failing",
  stopped: "stopped",
};

function age(iso: string | undefined): string {
  if (iso === undefined) return "—";
  const ms = now() - Date.parse(iso);
  if (!Number.isFinite(ms)) return "—";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s ago`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs}h ${m % 60}m ago`;
  return `${Math.floor(hrs / 24)}d ago`;
}

function clock(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString(undefined, { hour12: false });
}

/** A build id as a short label: long ids keep their start and end. */
function shortBuild(build: string | undefined): string {
  if (build === undefined) return "—";
  return build.length > 14 ? `${build.slice(0, 6)}…${build.slice(-5)}` : build;
}

const badge = (kind: string, text: string, title?: string): HTMLElement =>
  h("span", { class: `badge badge-${kind}`, title }, text);

const split = (key: string): [string, string] => {
  const dot = key.indexOf(".");
  return [key.slice(0, dot), key.slice(dot + 1)];
};

function nodes(): string[] {
  const out = new Set<string>(values(Source.presence).keys());
  for (const source of [Source.wants, Source.have, Source.differences]) {
    for (const key of values(source).keys()) out.add(split(key)[0]);
  }
  return [...out].sort();
}

function modules(): string[] {
  const out = new Set<string>(values(Source.modules).keys());
  for (const source of [Source.wants, Source.have, Source.differences, Source.assignments]) {
    for (const key of values(source).keys()) out.add(split(key)[1]);
  }
  return [...out].sort();
}

function present(presence: Presence | undefined): boolean {
  return presence !== undefined && now() - Date.parse(presence.heartbeat) < PRESENCE_STALE_MS;
}

function openAsks(): Ask[] {
  const answers = values(Source.answers);
  return [...values<Ask>(Source.asks).values()]
    .filter((ask) => !answers.has(ask.id))
    .sort((a, b) => a.at.localeCompare(b.at));
}

// ---------------------------------------------------------------------------------------------
// The sections

const RENDER: Record<Section, () => void> = {
  summary: renderSummary,
  asks: renderAsks,
  nodes: renderNodes,
  grid: renderGrid,
  detail: renderDetail,
  differences: renderDifferences,
  conditions: renderConditions,
  builds: renderBuilds,
  tools: renderTools,
};

const onProblems = (event: Event): void => {
  event.preventDefault();
  showProblems();
};

function renderSummary(): void {
  const all = nodes();
  const presence = values<Presence>(Source.presence);
  const up = all.filter((n) => present(presence.get(n))).length;
  const haves = [...values<Have>(Source.have).values()];
  const failing = haves.filter((x) => x.health === "failing").length;
  const healthy = haves.filter((x) => x.health === "healthy").length;
  const differences = values(Source.differences).size;
  const asks = openAsks().length;
  const updated =
    model.lastChange === undefined
      ? undefined
      : `last change ${model.lastChange.toLocaleTimeString(undefined, { hour12: false })}`;
  const link =
    model.link !== "live"
      ? badge("bad", model.link === "lost" ? "view lost" : "reconnecting…")
      : model.bus === "connected"
        ? badge("ok", "live", updated)
        : badge(
            "bad",
            "bus disconnected",
            "the view's connection to the bus is down; it reconnects by itself",
          );
  fill(
    byId("summary"),
    link,
    h("span", { class: "stat" }, h("b", {}, `${up}/${all.length}`), " nodes present"),
    h("span", { class: "stat" }, h("b", {}, modules().length), " modules"),
    h("span", { class: "stat" }, h("b", {}, healthy), " healthy"),
    h(
      "a",
      { class: `stat${failing > 0 ? " stat-bad" : ""}`, href: "#grid", onclick: onProblems },
      h("b", {}, failing),
      " failing",
    ),
    h(
      "a",
      { class: `stat${differences > 0 ? " stat-warn" : ""}`, href: "#grid", onclick: onProblems },
      h("b", {}, differences),
      " differences",
    ),
    h(
      "a",
      { class: `stat${asks > 0 ? " stat-warn" : ""}`, href: "#asks" },
      h("b", {}, asks),
      " open asks",
    ),
  );
  const problems = byId("problems");
  if (model.problems.size === 0) {
    problems.hidden = true;
  } else {
    problems.hidden = false;
    fill(
      problems,
      h("strong", {}, "Some of the mesh cannot be read, so parts of this page may be missing:"),
      h(
        "ul",
        {},
        ...[...model.problems].map(([source, problem]) =>
          h("li", {}, h("code", {}, source), " — ", problem),
        ),
      ),
    );
  }
}

function renderAsks(): void {
  const answers = values<Answer>(Source.answers);
  const all = [...values<Ask>(Source.asks).values()].sort((a, b) => a.at.localeCompare(b.at));
  // Open asks first; an answered one stays (muted, its answer changeable) until the assigner acts
  // on it and withdraws it.
  const asks = [
    ...all.filter((ask) => !answers.has(ask.id)),
    ...all.filter((ask) => answers.has(ask.id)),
  ];
  const open = all.length - all.filter((ask) => answers.has(ask.id)).length;
  const section = byId("asks");
  section.hidden = asks.length === 0;
  fill(
    section,
    h(
      "h2",
      {},
      "Asks ",
      h("span", { class: "count", title: "open" }, open),
      open < asks.length ? h("span", { class: "muted" }, ` ${asks.length - open} answered`) : null,
    ),
    ...asks.map((ask) => askRow(ask, answers.get(ask.id))),
  );
}

function askRow(ask: Ask, given: Answer | undefined): HTMLElement {
  const status = h(
    "span",
    { class: "ask-status", role: "status" },
    given === undefined
      ? ""
      : `answered ${given.answer} by ${given.by} ${age(given.at)}; waiting for the assigner`,
  );
  const answer = async (choice: "yes" | "no", button: HTMLButtonElement): Promise<void> => {
    button.disabled = true;
    status.textContent = "sending…";
    const result = await post("/api/answer", { id: ask.id, answer: choice });
    button.disabled = false;
    status.textContent = result.ok
      ? `answered ${choice}`
      : `${result.error.code}: ${result.error.message}`;
    status.className = `ask-status ${result.ok ? "ok" : "bad"}`;
  };
  const button = (choice: "yes" | "no"): HTMLButtonElement => {
    const element = h(
      "button",
      {
        class: `btn ${given === undefined ? `btn-${choice}` : "btn-small"}`,
        type: "button",
        "data-ask": ask.id,
        "data-answer": choice,
      },
      given === undefined ? (choice === "yes" ? "Yes" : "No") : `change to ${choice}`,
    );
    element.addEventListener("click", () => void answer(choice, element));
    return element;
  };
  const choices: Array<"yes" | "no"> =
    given === undefined ? ["yes", "no"] : [given.answer === "yes" ? "no" : "yes"];
  return h(
    "div",
    {
      class: `ask${given === undefined ? "" : " ask-answered"}`,
      "data-ask-id": ask.id,
      "data-answered": given?.answer,
    },
    h(
      "div",
      { class: "ask-text" },
      h("div", { class: "ask-what" }, ask.what),
      h(
        "div",
        { class: "ask-meta" },
        h("span", {}, "module ", h("b", {}, ask.module)),
        h("span", {}, "build ", h("code", {}, ask.build)),
        h("span", {}, "nodes ", h("b", {}, ask.nodes.join(", ") || "—")),
        h("span", { class: "muted" }, `asked ${age(ask.at)} · ${ask.id}`),
      ),
    ),
    h("div", { class: "ask-actions" }, status, ...choices.map(button)),
  );
}

function renderNodes(): void {
  const presence = values<Presence>(Source.presence);
  const verdicts = values<CompositionVerdict>(Source.compositions);
  const rows = nodes().map((node) => {
    const p = presence.get(node);
    const verdict = verdicts.get(node);
    const here = present(p);
    return h(
      "tr",
      { "data-node": node },
      h("th", { scope: "row" }, node),
      h(
        "td",
        {},
        p === undefined
          ? badge("none", "never seen")
          : here
            ? badge("ok", "present")
            : badge("bad", "gone"),
      ),
      h("td", { class: "num", title: p?.heartbeat }, p === undefined ? "—" : age(p.heartbeat)),
      h("td", {}, p === undefined ? "—" : `${p.facts.hostname} · ${p.facts.os}/${p.facts.arch}`),
      h("td", {}, p?.facts.version ?? "—"),
      h(
        "td",
        {},
        verdict === undefined
          ? h("span", { class: "muted" }, "not checked")
          : verdict.verdict === "ok"
            ? badge("ok", "composes")
            : h(
                "div",
                {},
                badge("bad", "refused"),
                h("ul", { class: "reasons" }, ...verdict.reasons.map((r) => h("li", {}, r))),
              ),
      ),
    );
  });
  fill(
    byId("nodes"),
    h("h2", {}, "Nodes ", h("span", { class: "count" }, rows.length)),
    rows.length === 0
      ? h(
          "p",
          { class: "empty" },
          "No node has reported yet. A host writes its presence when it starts.",
        )
      : h(
          "table",
          { class: "table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", {}, "node"),
              h("th", {}, "state"),
              h("th", {}, "heartbeat"),
              h("th", {}, "machine"),
              h("th", {}, "mesh"),
              h("th", {}, "composition"),
            ),
          ),
          h("tbody", {}, ...rows),
        ),
  );
}

function renderGrid(): void {
  const wants = values<Want>(Source.wants);
  const haves = values<Have>(Source.have);
  const differences = values<Difference>(Source.differences);
  const presence = values<Presence>(Source.presence);
  const verdicts = values<CompositionVerdict>(Source.compositions);
  const puts = values<Put>(Source.puts);
  const allColumns = nodes();
  const allRows = modules();
  const container = byId("grid-body");
  byId("grid-count").textContent = `${allRows.length} × ${allColumns.length}`;
  if (allRows.length === 0 || allColumns.length === 0) {
    fill(
      container,
      h(
        "p",
        { class: "empty" },
        allRows.length === 0
          ? "No module is registered yet: mesh module add <dir>."
          : "No node yet.",
      ),
    );
    return;
  }

  // What needs attention: a cell that is not healthy where it is wanted, or differs; a node gone
  // or refused.
  const troubled = (node: string, module: string): boolean => {
    const key = `${node}.${module}`;
    const want = wants.get(key);
    const have = haves.get(key);
    if (differences.has(key)) return true;
    if (want !== undefined && have?.health !== "healthy") return true;
    return have !== undefined && have.health !== "healthy" && have.health !== "stopped";
  };
  const nodeTroubled = (node: string): boolean =>
    !present(presence.get(node)) || verdicts.get(node)?.verdict === "refused";
  const filter = model.gridFilter.trim().toLowerCase();
  const matches = (name: string): boolean => filter === "" || name.includes(filter);
  // A filter naming a module shows its row on every node; one naming a node, its column.
  const rowsByName = allRows.filter(matches);
  const columnsByName = allColumns.filter(matches);
  let rows = rowsByName.length > 0 ? rowsByName : allRows;
  let columns = columnsByName.length > 0 ? columnsByName : allColumns;
  if (filter !== "" && rowsByName.length === 0 && columnsByName.length === 0) {
    rows = [];
    columns = [];
  }
  if (model.problemsOnly) {
    rows = rows.filter((m) => columns.some((n) => troubled(n, m)));
    columns = columns.filter((n) => nodeTroubled(n) || rows.some((m) => troubled(n, m)));
  }
  if (rows.length === 0 || columns.length === 0) {
    fill(
      container,
      h(
        "p",
        { class: "empty" },
        model.problemsOnly && filter === ""
          ? "Nothing needs attention: every module runs healthy where it is wanted."
          : `Nothing matches ${JSON.stringify(model.gridFilter)}${model.problemsOnly ? " that needs attention" : ""}.`,
      ),
    );
    return;
  }

  const head = h(
    "tr",
    {},
    h("th", { class: "corner" }, "module \\ node"),
    ...columns.map((node) => {
      const here = present(presence.get(node));
      const verdict = verdicts.get(node);
      return h(
        "th",
        { scope: "col", class: here ? "" : "node-gone", title: here ? undefined : "no heartbeat" },
        node,
        here ? null : h("span", { class: "col-note" }, " gone"),
        verdict?.verdict === "refused"
          ? h("div", {}, badge("bad", "composition refused", verdict.reasons.join("\n")))
          : null,
      );
    }),
  );
  const body = rows.map((module) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, module, h("div", { class: "row-note" }, placement(module))),
      ...columns.map((node) => {
        const key = `${node}.${module}`;
        const put = puts.get(key) ?? puts.get(`all.${module}`);
        return cell(node, module, wants.get(key), haves.get(key), differences.get(key), put);
      }),
    ),
  );
  const hidden = allRows.length - rows.length + (allColumns.length - columns.length);
  fill(
    container,
    h(
      "div",
      { class: "grid-scroll" },
      h("table", { class: "grid" }, h("thead", {}, head), h("tbody", {}, ...body)),
    ),
    h(
      "p",
      { class: "legend" },
      badge("ok", "healthy"),
      badge("info", "starting"),
      badge("bad", "failing"),
      badge("none", "stopped"),
      badge("warn", "wanted, not running"),
      " · ⚠ want and have differ · click a cell for its details",
      hidden > 0
        ? h(
            "span",
            { class: "hidden-note" },
            ` · ${allRows.length - rows.length} modules and ${allColumns.length - columns.length} nodes hidden by the filter`,
          )
        : null,
    ),
  );
}

/** Where the operator placed a module: every node, some nodes, or nowhere. */
function placement(module: string): string {
  const targets = [...values(Source.assignments).keys()]
    .map(split)
    .filter(([, m]) => m === module)
    .map(([target]) => target);
  if (targets.length === 0) return "not assigned";
  return targets.includes("all") ? "on every node" : `on ${targets.sort().join(", ")}`;
}

function cell(
  node: string,
  module: string,
  want: Want | undefined,
  have: Have | undefined,
  difference: Difference | undefined,
  put: Put | undefined,
): HTMLElement {
  const selected = model.selected?.node === node && model.selected.module === module;
  const attrs = {
    class: `cell${selected ? " selected" : ""}`,
    "data-node": node,
    "data-module": module,
    "data-health": have?.health ?? (want === undefined ? "none" : "missing"),
    tabindex: 0,
    title: want?.reason,
    onclick: () => select(node, module),
    onkeydown: (event: Event) => {
      if ((event as KeyboardEvent).key === "Enter") select(node, module);
    },
  };
  if (want === undefined && have === undefined) {
    return h(
      "td",
      { ...attrs, class: `${attrs.class} cell-empty` },
      h("span", { class: "muted" }, "·"),
    );
  }
  const health =
    have === undefined
      ? badge("warn", "not running")
      : badge(
          have.health === "healthy"
            ? "ok"
            : have.health === "starting"
              ? "info"
              : have.health === "failing"
                ? "bad"
                : "none",
          HEALTH_LABEL[have.health] ?? have.health,
        );
  const wantLine =
    want === undefined
      ? h("div", { class: "cell-line muted" }, "not wanted")
      : have?.build === want.build
        ? h(
            "div",
            { class: "cell-line" },
            h("code", {}, shortBuild(want.build)),
            " ",
            h("span", { class: "rule" }, want.rule),
          )
        : h(
            "div",
            { class: "cell-line" },
            h("code", {}, shortBuild(have?.build)),
            " → ",
            h("code", {}, shortBuild(want.build)),
            " ",
            h("span", { class: "rule" }, want.rule),
          );
  return h(
    "td",
    attrs,
    h(
      "div",
      { class: "cell-top" },
      health,
      have === undefined ? null : h("span", { class: "since", title: have.since }, age(have.since)),
      difference !== undefined
        ? h("span", { class: "diff-mark", title: difference.reasons.join("\n") }, "⚠")
        : null,
    ),
    wantLine,
    have !== undefined && have.restarts > 0
      ? h(
          "div",
          { class: "cell-line muted" },
          `${have.restarts} restart${have.restarts === 1 ? "" : "s"}`,
        )
      : null,
    put === undefined
      ? null
      : h(
          "div",
          { class: "cell-line", title: `${put.by}: ${put.why}` },
          h("span", { class: "pin" }, "pinned"),
          " to ",
          h("code", {}, shortBuild(put.build)),
        ),
    have?.lastError !== undefined
      ? h("div", { class: "cell-line cell-error" }, have.lastError)
      : null,
  );
}

function select(node: string, module: string): void {
  const same = model.selected?.node === node && model.selected.module === module;
  model.selected = same ? undefined : { node, module };
  invalidate("grid", "detail");
}

function renderDetail(): void {
  const container = byId("detail");
  const selected = model.selected;
  if (selected === undefined) {
    container.hidden = true;
    return;
  }
  container.hidden = false;
  const key = `${selected.node}.${selected.module}`;
  const want = values<Want>(Source.wants).get(key);
  const have = values<Have>(Source.have).get(key);
  const difference = values<Difference>(Source.differences).get(key);
  const row = (label: string, ...value: Array<Node | string>) =>
    h("tr", {}, h("th", { scope: "row" }, label), h("td", {}, ...value));
  fill(
    container,
    h(
      "h2",
      {},
      `${selected.module} on ${selected.node}`,
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          onclick: () => select(selected.node, selected.module),
        },
        "close",
      ),
    ),
    h(
      "div",
      { class: "detail-cols" },
      h(
        "table",
        { class: "table kv" },
        h("caption", {}, "want"),
        want === undefined
          ? row("—", "not wanted here")
          : h(
              "tbody",
              {},
              row("build", h("code", {}, want.build)),
              row("rule", want.rule),
              row("reason", want.reason),
              row("manifest", h("code", {}, want.manifestDigest.slice(0, 12))),
              row("fingerprint", h("code", {}, want.fingerprint.slice(0, 12))),
            ),
      ),
      h(
        "table",
        { class: "table kv" },
        h("caption", {}, "have"),
        have === undefined
          ? row("—", "not running here")
          : h(
              "tbody",
              {},
              row("build", h("code", {}, have.build ?? "—")),
              row("health", `${have.health} since ${age(have.since)}`),
              row("restarts", String(have.restarts)),
              row("last error", have.lastError ?? "—"),
              row("fingerprint", h("code", {}, have.fingerprint.slice(0, 12))),
            ),
      ),
      h(
        "table",
        { class: "table kv" },
        h("caption", {}, "difference"),
        difference === undefined
          ? row("—", "none: want and have agree")
          : h(
              "tbody",
              {},
              row("want", difference.want ?? "—"),
              row("composed", difference.composed ?? "—"),
              row("have", difference.have ?? "—"),
              row(
                "why",
                h("ul", { class: "reasons" }, ...difference.reasons.map((r) => h("li", {}, r))),
              ),
            ),
      ),
    ),
  );
}

function renderDifferences(): void {
  const rows = [...values<Difference>(Source.differences)].sort(([a], [b]) => a.localeCompare(b));
  fill(
    byId("differences"),
    h("h2", {}, "Differences ", h("span", { class: "count" }, rows.length)),
    rows.length === 0
      ? h("p", { class: "empty" }, "None: every node runs what it should.")
      : h(
          "table",
          { class: "table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", {}, "node"),
              h("th", {}, "module"),
              h("th", {}, "want"),
              h("th", {}, "composed"),
              h("th", {}, "have"),
              h("th", {}, "why"),
            ),
          ),
          h(
            "tbody",
            {},
            ...rows.map(([key, d]) => {
              const [node, module] = split(key);
              return h(
                "tr",
                {},
                h("td", {}, node),
                h("td", {}, module),
                h("td", {}, h("code", {}, shortBuild(d.want))),
                h("td", {}, h("code", {}, shortBuild(d.composed))),
                h("td", {}, h("code", {}, shortBuild(d.have))),
                h("td", {}, h("ul", { class: "reasons" }, ...d.reasons.map((r) => h("li", {}, r)))),
              );
            }),
          ),
        ),
  );
}

const LEVEL_KIND: Record<string, string> = { info: "info", warning: "warn", error: "bad" };

function renderConditions(): void {
  const rows = [...values<Condition>(Source.conditions).values()]
    .sort((a, b) => b.at.localeCompare(a.at))
    .slice(0, 100);
  fill(
    byId("conditions"),
    h(
      "h2",
      {},
      "Recent conditions ",
      h("span", { class: "count" }, values(Source.conditions).size),
    ),
    rows.length === 0
      ? h("p", { class: "empty" }, "No condition has been said.")
      : h(
          "table",
          { class: "table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", {}, "when"),
              h("th", {}, "level"),
              h("th", {}, "module"),
              h("th", {}, "node"),
              h("th", {}, "message"),
            ),
          ),
          h(
            "tbody",
            {},
            ...rows.map((c) =>
              h(
                "tr",
                { "data-condition": `${c.module}.${c.name}` },
                h("td", { class: "num", title: c.at }, clock(c.at)),
                h("td", {}, badge(LEVEL_KIND[c.level] ?? "none", c.level)),
                h("td", {}, c.module, h("span", { class: "muted" }, ` / ${c.name}`)),
                h("td", { class: "nowrap" }, c.node ?? "—"),
                h("td", { class: "message" }, c.message),
              ),
            ),
          ),
        ),
  );
}

const STATUS_KIND: Record<string, string> = { built: "ok", building: "info", failed: "bad" };

function renderBuilds(): void {
  const rows = [...values<BuildSummary>(Source.builds)]
    .sort(([, a], [, b]) => b.timings.started.localeCompare(a.timings.started))
    .slice(0, 50);
  const log = model.openLog;
  fill(
    byId("builds"),
    h("h2", {}, "Builds ", h("span", { class: "count" }, values(Source.builds).size)),
    rows.length === 0
      ? h("p", { class: "empty" }, "No build yet.")
      : h(
          "table",
          { class: "table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", {}, "module"),
              h("th", {}, "build"),
              h("th", {}, "status"),
              h("th", {}, "started"),
              h("th", {}, "took"),
              h("th", {}, "log"),
            ),
          ),
          h(
            "tbody",
            {},
            ...rows.map(([key, b]) =>
              h(
                "tr",
                { "data-build": key },
                h("td", {}, b.module),
                h(
                  "td",
                  { class: "nowrap" },
                  h("code", { title: b.build }, shortBuild(b.build)),
                  h("span", { class: "muted" }, ` #${b.candidate}`),
                ),
                h(
                  "td",
                  {},
                  badge(STATUS_KIND[b.status] ?? "none", b.status),
                  b.error === undefined ? null : h("div", { class: "cell-error" }, b.error),
                ),
                h("td", { class: "num", title: b.timings.started }, age(b.timings.started)),
                h(
                  "td",
                  { class: "num" },
                  b.timings.ms === undefined ? "—" : `${(b.timings.ms / 1000).toFixed(1)}s`,
                ),
                h(
                  "td",
                  {},
                  b.logLines === 0
                    ? h("span", { class: "muted" }, "empty")
                    : h(
                        "button",
                        {
                          class: "btn btn-small",
                          type: "button",
                          onclick: () => void showLog(key),
                        },
                        log?.key === key ? "hide" : `${b.logLines} lines`,
                      ),
                ),
              ),
            ),
          ),
        ),
    log === undefined
      ? null
      : h(
          "div",
          { class: "log" },
          h("div", { class: "log-title" }, `log of ${log.key}`),
          h("pre", { id: "build-log" }, log.text),
        ),
  );
}

async function showLog(key: string): Promise<void> {
  if (model.openLog?.key === key) {
    model.openLog = undefined;
  } else {
    const response = await fetch(`/api/build-log?key=${encodeURIComponent(key)}`);
    model.openLog = {
      key,
      text: response.ok ? await response.text() : `the log could not be read (${response.status})`,
    };
  }
  invalidate("builds");
}

// Tools --------------------------------------------------------------------------------------

let toolForm: { subject: string; form: SchemaForm } | undefined;

function renderTools(): void {
  const byTool = new Map<string, ToolEntry[]>();
  for (const tool of model.tools) {
    const key = `${tool.module}/${tool.tool}`;
    byTool.set(key, [...(byTool.get(key) ?? []), tool]);
  }
  byId("tools-count").textContent = String(byTool.size);
  byId("tools-refresh").textContent = model.toolsState === "loading" ? "finding…" : "refresh";
  const container = byId("tool-list");
  if (byTool.size === 0) {
    fill(
      container,
      h(
        "p",
        { class: "empty" },
        model.toolsState === "failed"
          ? "Tools could not be listed."
          : "No tool is served. Tools appear when the runtime serves a module's tools bundle.",
      ),
    );
    return;
  }
  // Only the list is rebuilt: the open form lives in its own slot, never detached, so what is
  // being typed into it is never lost to a refresh of the list.
  const list = h(
    "ul",
    { class: "tool-list" },
    ...[...byTool].map(([name, entries]) => {
      const first = entries[0] as ToolEntry;
      return h(
        "li",
        {},
        h(
          "div",
          { class: "tool-name" },
          h("code", {}, name),
          first.description === ""
            ? null
            : h("span", { class: "muted" }, ` — ${first.description}`),
        ),
        h(
          "div",
          { class: "tool-nodes" },
          ...entries.map((entry) =>
            h(
              "button",
              {
                class: `btn btn-small${toolForm?.subject === entry.subject ? " active" : ""}`,
                type: "button",
                "data-tool": entry.subject,
                onclick: () => openTool(entry),
              },
              `call on ${entry.node}`,
            ),
          ),
        ),
        ...first.problems.map((p) => h("div", { class: "cell-error" }, p)),
      );
    }),
  );
  fill(container, list);
}

function openTool(tool: ToolEntry): void {
  const form = schemaForm(tool.input, `in-${tool.module}-${tool.tool}`);
  toolForm = { subject: tool.subject, form };
  const result = h("div", { class: "tool-result", id: "tool-result", role: "status" });
  const submit = h("button", { class: "btn btn-primary", type: "submit" }, "Call");
  const element = h(
    "form",
    { id: "tool-call", class: "tool-call", "data-subject": tool.subject },
    h(
      "div",
      { class: "tool-call-title" },
      h("code", {}, `${tool.module}/${tool.tool}`),
      " on ",
      h("b", {}, tool.node),
    ),
    form.element,
    h("div", { class: "form-actions" }, submit),
    result,
  );
  element.addEventListener("submit", (event) => {
    event.preventDefault();
    let input: unknown;
    try {
      input = form.read();
    } catch (error) {
      fill(result, h("div", { class: "bad" }, (error as Error).message));
      return;
    }
    submit.disabled = true;
    fill(result, h("span", { class: "muted" }, "calling…"));
    void post("/api/call", { subject: tool.subject, input: input ?? {} }).then((outcome) => {
      submit.disabled = false;
      fill(
        result,
        outcome.ok
          ? h(
              "div",
              { class: "result-ok" },
              h(
                "div",
                { class: "result-head" },
                badge("ok", "ok"),
                h("span", { class: "muted" }, ` ${outcome.ms} ms`),
              ),
              h("pre", {}, JSON.stringify(outcome.result, null, 2)),
            )
          : h(
              "div",
              { class: "result-bad" },
              h("div", { class: "result-head" }, badge("bad", outcome.error.code)),
              h("pre", {}, outcome.error.message),
            ),
      );
    });
  });
  fill(byId("tool-slot"), element);
  invalidate("tools");
}

// ---------------------------------------------------------------------------------------------

byId("tools-refresh").addEventListener("click", () => void loadTools());
const gridFilter = byId("grid-filter") as HTMLInputElement;
const problemsOnly = byId("grid-problems") as HTMLInputElement;
gridFilter.addEventListener("input", () => {
  model.gridFilter = gridFilter.value;
  invalidate("grid");
});
problemsOnly.addEventListener("change", () => {
  model.problemsOnly = problemsOnly.checked;
  invalidate("grid");
});
/** The summary's "failing" and "differences" lead to the grid narrowed to what needs attention. */
function showProblems(): void {
  problemsOnly.checked = true;
  model.problemsOnly = true;
  invalidate("grid");
  byId("grid").scrollIntoView();
}

connect();
// Heartbeat ages move with time, not with changes.
window.setInterval(() => invalidate("nodes", "grid"), 5_000);
