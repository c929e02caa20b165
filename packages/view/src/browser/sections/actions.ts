/**
 * What an operator does from the page, each the CLI's own verb on the server: assign/unassign,
 * put/unput, retry, config set/unset (the key's declaration as a form), secret set (typed once,
 * never shown again) and registering a module. Every action says what it will do, as the CLI
 * command it is, and waits for a confirmation; its result (the CLI's line, or its refusal) is
 * shown after.
 */
import { byId, fill, h } from "../dom.js";
import { emptyNote } from "../format.js";
import { model, values } from "../model.js";
import { Source, type ActionRequest, type BuildSummary } from "../wire.js";
import { configForms } from "./config-form.js";
import { propose, renderPendingAndResult } from "./confirm.js";

let drawnFor = "";

export function renderActions(): void {
  const container = byId("actions");
  const selected = model.selected;
  const key = selected === undefined ? "" : `${selected.node}.${selected.module}`;
  // The forms are drawn again only for another cell: a redraw would lose what is typed.
  if (key !== drawnFor || container.childElementCount === 0) {
    drawnFor = key;
    fill(
      container,
      h("h2", {}, "Actions"),
      h("div", { id: "action-confirm" }),
      h("div", { id: "action-result", role: "status" }),
      selected === undefined
        ? emptyNote("Select a cell of the grid to act on its module and node.")
        : cellActions(selected.module, selected.node),
      registerForm(),
    );
    if (selected !== undefined) void configForms(selected.module, selected.node);
  }
  renderPendingAndResult();
}

const button = (label: string, name: string, onclick: () => void): HTMLElement =>
  h("button", { class: "btn btn-small", type: "button", "data-action": name, onclick }, label);

function cellActions(module: string, node: string): HTMLElement {
  const nodesField = h("input", {
    id: "action-nodes",
    type: "text",
    placeholder: "node-a, node-b",
    "aria-label": "some nodes",
  });
  const someNodes = (): string[] =>
    nodesField.value
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n !== "");
  // Some nodes: one assignment each, as the CLI is run once per node.
  const assign = (remove: boolean, nodes: ReadonlyArray<string | undefined>): void => {
    if (nodes.length === 0) return;
    propose(
      ...nodes.map((n): ActionRequest => ({
        action: "assign",
        input: { module, remove, ...(n === undefined ? {} : { node: n }) },
      })),
    );
  };
  return h(
    "div",
    { class: "action-groups", "data-actions-for": `${node}.${module}` },
    h(
      "div",
      { class: "action-group" },
      h("h3", {}, `Where ${module} runs`),
      button(`assign on ${node}`, "assign-node", () => assign(false, [node])),
      button(`unassign on ${node}`, "unassign-node", () => assign(true, [node])),
      button("assign on every node", "assign-all", () => assign(false, [undefined])),
      button("unassign from every node", "unassign-all", () => assign(true, [undefined])),
      h(
        "div",
        { class: "action-row" },
        nodesField,
        button("assign on these", "assign-some", () => assign(false, someNodes())),
        button("unassign on these", "unassign-some", () => assign(true, someNodes())),
      ),
    ),
    putGroup(module, node),
    h(
      "div",
      { class: "action-group" },
      h("h3", {}, "After a failure"),
      button(`retry on ${node}`, "retry-node", () =>
        propose({
          action: "retry",
          input: { module, node },
        }),
      ),
      button("retry on every node", "retry-all", () =>
        propose({ action: "retry", input: { module } }),
      ),
    ),
    h(
      "div",
      { class: "action-group", id: "config-forms" },
      h("h3", {}, `Config of ${module}`),
      emptyNote("Reading its keys…"),
    ),
    secretForm(module),
  );
}

function putGroup(module: string, node: string): HTMLElement {
  const builds = [...values<BuildSummary>(Source.builds).values()]
    .filter((b) => b.module === module && b.status === "built")
    .sort((a, b) => b.candidate - a.candidate);
  const select = h(
    "select",
    { id: "put-build", "aria-label": "build to put" },
    ...builds.map((b) => h("option", { value: b.build }, b.build)),
  );
  const build = (): string => select.value;
  return h(
    "div",
    { class: "action-group" },
    h("h3", {}, "Pin a build"),
    builds.length === 0 ? emptyNote("No build of it has built.") : select,
    button(`put on ${node}`, "put-node", () =>
      propose({
        action: "put",
        input: { module, node, build: build() },
      }),
    ),
    button("put on every node", "put-all", () =>
      propose({
        action: "put",
        input: { module, build: build() },
      }),
    ),
    button(`unput on ${node}`, "unput-node", () =>
      propose({ action: "put", input: { module, node } }),
    ),
    button("unput on every node", "unput-all", () => propose({ action: "put", input: { module } })),
  );
}

/** The secret's value goes into a password field, is sent once, and the field is emptied. */
function secretForm(module: string): HTMLElement {
  const name = h("input", {
    id: "secret-name",
    type: "text",
    "aria-label": "secret name",
    placeholder: "name",
  });
  const value = h("input", {
    id: "secret-value",
    type: "password",
    autocomplete: "off",
    "aria-label": "secret value",
    placeholder: "value",
  });
  return h(
    "div",
    { class: "action-group" },
    h("h3", {}, `A secret of ${module}`),
    h("div", { class: "action-row" }, name, value),
    button("set the secret", "secret-set", () => {
      const request: ActionRequest = {
        action: "secretSet",
        input: { module, name: name.value.trim(), value: value.value },
      };
      value.value = "";
      propose(request);
    }),
  );
}

function registerForm(): HTMLElement {
  const spec = h("input", {
    id: "register-spec",
    type: "text",
    "aria-label": "git URL or path",
    placeholder: "https://…/repo.git#path or /path/to/module",
  });
  return h(
    "div",
    { class: "action-group" },
    h("h3", {}, "Register a module"),
    h(
      "div",
      { class: "action-row" },
      spec,
      button("register", "register", () =>
        propose({
          action: "register",
          input: { spec: spec.value.trim() },
        }),
      ),
    ),
  );
}
