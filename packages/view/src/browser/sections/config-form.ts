/**
 * A module's config keys as forms: each declared key's declaration (type, enum, bounds) is the
 * schema of its field, its value set mesh-wide or on the selected node (`mesh config set`), or
 * unset (`mesh config unset`). A module whose manifest is not known yet gets a key and a JSON
 * value, unchecked, as the CLI takes them.
 */
import { byId, fill, h } from "../dom.js";
import { emptyNote } from "../format.js";
import { schemaForm } from "../schema-form.js";
import type { ActionRequest } from "../wire.js";
import { propose } from "./confirm.js";

interface ConfigKeys {
  readonly declared: Readonly<Record<string, Record<string, unknown>>> | undefined;
  readonly values: Readonly<Record<string, unknown>>;
}

/** Reads the module's keys and draws their forms into `#config-forms`. */
export async function configForms(module: string, node: string): Promise<void> {
  let keys: ConfigKeys | undefined;
  try {
    const response = await fetch(`/api/config-keys?${new URLSearchParams({ module }).toString()}`);
    keys = response.ok ? ((await response.json()) as ConfigKeys) : undefined;
  } catch {
    keys = undefined;
  }
  const box = document.getElementById("config-forms");
  if (box === null || box.closest(`[data-actions-for="${node}.${module}"]`) === null) return;
  fill(
    byId("config-forms"),
    h("h3", {}, `Config of ${module}`),
    keys === undefined
      ? emptyNote("Its keys could not be read.")
      : keys.declared === undefined
        ? freeForm(module, node)
        : Object.keys(keys.declared).length === 0
          ? emptyNote(`${module} declares no config key.`)
          : h(
              "div",
              {},
              ...Object.entries(keys.declared)
                .sort(([a], [b]) => (a < b ? -1 : 1))
                .map(([key, declaration]) => keyForm(module, node, key, declaration, keys)),
            ),
  );
}

const scopes = (key: string, node: string): HTMLSelectElement =>
  h(
    "select",
    { "aria-label": `where ${key} applies`, "data-scope": key },
    h("option", { value: "" }, "mesh-wide"),
    h("option", { value: node }, `on ${node}`),
  );

function set(module: string, key: string, value: string, node: string): void {
  const request: ActionRequest = {
    action: "configSet",
    input: { module, key, value, ...(node === "" ? {} : { node }) },
  };
  propose(request);
}

function unset(module: string, key: string, node: string): void {
  const request: ActionRequest = {
    action: "configUnset",
    input: { module, key, ...(node === "" ? {} : { node }) },
  };
  propose(request);
}

function keyForm(
  module: string,
  node: string,
  key: string,
  declaration: Record<string, unknown>,
  keys: ConfigKeys,
): HTMLElement {
  const form = schemaForm(
    { type: "object", properties: { [key]: declaration }, required: [key] },
    `config-${module}`,
  );
  const scope = scopes(key, node);
  const problem = h("span", { class: "bad" });
  const now = [
    key in keys.values ? `mesh-wide ${JSON.stringify(keys.values[key])}` : undefined,
    `${key}.${node}` in keys.values
      ? `on ${node} ${JSON.stringify(keys.values[`${key}.${node}`])}`
      : undefined,
    "default" in declaration ? `default ${JSON.stringify(declaration["default"])}` : undefined,
  ].filter((x) => x !== undefined);
  return h(
    "div",
    { class: "config-key", "data-config-key": key },
    form.element,
    h("p", { class: "muted" }, now.length === 0 ? "no value" : now.join(" · ")),
    h(
      "div",
      { class: "action-row" },
      scope,
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          "data-action": "config-set",
          onclick: () => {
            try {
              const value = (form.read() as Record<string, unknown>)[key];
              problem.textContent = "";
              set(module, key, JSON.stringify(value), scope.value);
            } catch (error) {
              problem.textContent = (error as Error).message;
            }
          },
        },
        "set",
      ),
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          "data-action": "config-unset",
          onclick: () => unset(module, key, scope.value),
        },
        "unset",
      ),
      problem,
    ),
  );
}

function freeForm(module: string, node: string): HTMLElement {
  const key = h("input", { type: "text", "aria-label": "config key", placeholder: "key" });
  const value = h("input", {
    type: "text",
    "aria-label": "config value",
    placeholder: "JSON value",
  });
  const scope = scopes("the key", node);
  return h(
    "div",
    { class: "config-key" },
    h(
      "p",
      { class: "muted" },
      `${module}'s manifest is not known yet: the key and value are unchecked.`,
    ),
    h(
      "div",
      { class: "action-row" },
      key,
      value,
      scope,
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          "data-action": "config-set",
          onclick: () => set(module, key.value.trim(), value.value, scope.value),
        },
        "set",
      ),
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          "data-action": "config-unset",
          onclick: () => unset(module, key.value.trim(), scope.value),
        },
        "unset",
      ),
    ),
  );
}
