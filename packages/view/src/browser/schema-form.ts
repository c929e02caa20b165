/**
 * A form built from a tool's input JSON Schema: strings, numbers, integers, booleans, enums and
 * nested objects get fields; anything else (arrays, unions, references) gets a JSON text area of
 * its own, and a schema that is not an object at the top gets one for the whole input.
 */
import { h } from "./dom.js";

interface Schema {
  readonly type?: string | readonly string[];
  readonly properties?: Record<string, Schema>;
  readonly required?: readonly string[];
  readonly enum?: readonly unknown[];
  readonly description?: string;
  readonly title?: string;
  readonly default?: unknown;
}

/** A built form: its element, and how to read the input it holds (throws with what is wrong). */
export interface SchemaForm {
  readonly element: HTMLElement;
  read(): unknown;
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const typeOf = (schema: Schema): string | undefined =>
  Array.isArray(schema.type)
    ? (schema.type as readonly string[]).find((t) => t !== "null")
    : (schema.type as string | undefined);

export function schemaForm(schema: unknown, idPrefix: string): SchemaForm {
  if (isSchema(schema) && (typeOf(schema) === "object" || schema.properties !== undefined)) {
    return objectForm(schema, idPrefix, "");
  }
  return jsonField(idPrefix, "input", schema, false);
}

function objectForm(schema: Schema, idPrefix: string, path: string): SchemaForm {
  const required = new Set(schema.required ?? []);
  const fields: Array<{ name: string; form: SchemaForm; optional: boolean }> = [];
  const element = h("div", { class: "form-fields" });
  const properties = Object.entries(schema.properties ?? {});
  for (const [name, property] of properties) {
    const label = path === "" ? name : `${path}.${name}`;
    const form = field(
      isSchema(property) ? property : {},
      `${idPrefix}-${name}`,
      label,
      required.has(name),
    );
    fields.push({ name, form, optional: !required.has(name) });
    element.appendChild(form.element);
  }
  if (properties.length === 0) {
    element.appendChild(h("p", { class: "muted" }, "This tool takes no input."));
  }
  return {
    element,
    read: () => {
      const out: Record<string, unknown> = {};
      for (const { name, form, optional } of fields) {
        const value = form.read();
        if (value === undefined && optional) continue;
        out[name] = value;
      }
      return out;
    },
  };
}

/** What every kind of field is built from. */
interface Field {
  readonly schema: Schema;
  readonly id: string;
  readonly label: string;
  readonly required: boolean;
  /** The field's name, marked when required. */
  readonly title: HTMLElement;
  /** The schema's description, when it has one. */
  readonly help: HTMLElement | null;
}

function field(schema: Schema, id: string, label: string, required: boolean): SchemaForm {
  const title = h(
    "span",
    { class: "field-name" },
    label,
    required ? h("abbr", { title: "required", class: "required" }, " *") : null,
  );
  const help =
    schema.description === undefined
      ? null
      : h("span", { class: "field-help" }, schema.description);
  const parts: Field = { schema, id, label, required, title, help };
  if (schema.enum !== undefined) return enumField(parts, schema.enum);
  const type = typeOf(schema);
  switch (type) {
    case "string":
      return stringField(parts);
    case "number":
    case "integer":
      return numberField(parts, type);
    case "boolean":
      return booleanField(parts);
    case "object": {
      const inner = objectForm(schema, id, label);
      return {
        element: h(
          "fieldset",
          { class: "field-group" },
          h("legend", {}, title),
          help,
          inner.element,
        ),
        read: () => inner.read(),
      };
    }
    default:
      return jsonField(id, label, schema, required);
  }
}

function enumField(
  { schema, id, label, required, title, help }: Field,
  values: readonly unknown[],
): SchemaForm {
  const select = h("select", { id, name: label });
  if (!required) select.appendChild(h("option", { value: "" }, "—"));
  values.forEach((value, index) =>
    select.appendChild(
      h(
        "option",
        { value: String(index) },
        typeof value === "string" ? value : JSON.stringify(value),
      ),
    ),
  );
  if (schema.default !== undefined) {
    const index = values.findIndex((v) => JSON.stringify(v) === JSON.stringify(schema.default));
    if (index >= 0) select.value = String(index);
  }
  return {
    element: h("label", { class: "field", for: id }, title, select, help),
    read: () => (select.value === "" ? undefined : values[Number(select.value)]),
  };
}

function stringField({ schema, id, label, required, title, help }: Field): SchemaForm {
  const input = h("input", {
    id,
    name: label,
    type: "text",
    value: typeof schema.default === "string" ? schema.default : undefined,
    required,
  });
  return {
    element: h("label", { class: "field", for: id }, title, input, help),
    read: () => (input.value === "" && !required ? undefined : input.value),
  };
}

function numberField(
  { schema, id, label, required, title, help }: Field,
  type: "number" | "integer",
): SchemaForm {
  const input = h("input", {
    id,
    name: label,
    type: "number",
    step: type === "integer" ? 1 : "any",
    value: typeof schema.default === "number" ? schema.default : undefined,
    required,
  });
  return {
    element: h("label", { class: "field", for: id }, title, input, help),
    read: () => {
      if (input.value === "") {
        if (required) throw new Error(`${label} is required`);
        return undefined;
      }
      const value = Number(input.value);
      if (!Number.isFinite(value) || (type === "integer" && !Number.isInteger(value))) {
        throw new Error(`${label} must be ${type === "integer" ? "a whole number" : "a number"}`);
      }
      return value;
    },
  };
}

function booleanField({ schema, id, label, title, help }: Field): SchemaForm {
  const input = h("input", { id, name: label, type: "checkbox", checked: schema.default === true });
  return {
    element: h("label", { class: "field field-check", for: id }, input, title, help),
    read: () => input.checked,
  };
}

/** A JSON text area: the fallback for what the form does not model. */
function jsonField(id: string, label: string, schema: unknown, required: boolean): SchemaForm {
  const area = h("textarea", { id, name: label, rows: 4, spellcheck: false, class: "json" });
  area.value =
    isSchema(schema) && schema.default !== undefined ? JSON.stringify(schema.default, null, 2) : "";
  return {
    element: h(
      "label",
      { class: "field", for: id },
      h("span", { class: "field-name" }, label, h("span", { class: "field-help" }, " JSON")),
      area,
    ),
    read: () => {
      if (area.value.trim() === "") {
        if (required) throw new Error(`${label} is required (JSON)`);
        return undefined;
      }
      try {
        return JSON.parse(area.value) as unknown;
      } catch (error) {
        throw new Error(`${label} is not JSON: ${(error as Error).message}`);
      }
    },
  };
}
