/**
 * The tools the mesh serves, grouped by module and tool with a button per node, and the form of
 * the one being called. Only the list is rebuilt: the open form lives in its own slot, never
 * detached, so what is being typed into it is never lost to a refresh of the list.
 */
import { post } from "../api.js";
import { byId, fill, h } from "../dom.js";
import { badge, emptyNote } from "../format.js";
import { invalidate, model } from "../model.js";
import { schemaForm, type SchemaForm } from "../schema-form.js";
import type { CallResult, ToolEntry } from "../wire.js";

let toolForm: { subject: string; form: SchemaForm } | undefined;

export function renderTools(): void {
  const byTool = new Map<string, ToolEntry[]>();
  for (const tool of model.tools) {
    const key = `${tool.module}/${tool.tool}`;
    const entries = byTool.get(key) ?? [];
    entries.push(tool);
    byTool.set(key, entries);
  }
  byId("tools-count").textContent = String(byTool.size);
  byId("tools-refresh").textContent = model.toolsState === "loading" ? "finding…" : "refresh";
  const container = byId("tool-list");
  if (byTool.size === 0) {
    fill(
      container,
      emptyNote(
        model.toolsState === "failed"
          ? "Tools could not be listed."
          : "No tool is served. Tools appear when the runtime serves a module's tools bundle.",
      ),
    );
    return;
  }
  fill(
    container,
    h(
      "ul",
      { class: "tool-list" },
      ...[...byTool].map(([name, entries]) => toolItem(name, entries)),
    ),
  );
}

function toolItem(name: string, entries: readonly ToolEntry[]): HTMLElement {
  const first = entries[0] as ToolEntry;
  return h(
    "li",
    {},
    h(
      "div",
      { class: "tool-name" },
      h("code", {}, name),
      first.description === "" ? null : h("span", { class: "muted" }, ` — ${first.description}`),
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
      first.nodeCount > entries.length
        ? h("span", { class: "muted" }, ` and ${first.nodeCount - entries.length} more nodes`)
        : null,
    ),
    ...first.problems.map((p) => h("div", { class: "cell-error" }, p)),
  );
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
      fill(result, outcomeView(outcome));
    });
  });
  fill(byId("tool-slot"), element);
  invalidate("tools");
}

function outcomeView(outcome: CallResult): HTMLElement {
  if (!outcome.ok) {
    return h(
      "div",
      { class: "result-bad" },
      h("div", { class: "result-head" }, badge("bad", outcome.error.code)),
      h("pre", {}, outcome.error.message),
    );
  }
  return h(
    "div",
    { class: "result-ok" },
    h(
      "div",
      { class: "result-head" },
      badge("ok", "ok"),
      h("span", { class: "muted" }, ` ${outcome.ms} ms`),
    ),
    h("pre", {}, JSON.stringify(outcome.result, null, 2)),
  );
}
