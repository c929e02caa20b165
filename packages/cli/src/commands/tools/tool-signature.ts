/**
 * A tool as a person reads it: `hello/greet(name: string, times?: integer) → { text: string }`,
 * rendered from the JSON Schema its endpoint publishes. `mesh tools` prints this; the schema
 * itself only with `--json`.
 */

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** How deep nested objects are spelled out before they are shown as `{…}`. */
const MAX_DEPTH = 3;

/** A JSON Schema as a type: `string`, `"a" | "b"`, `integer[]`, `{ a: string, b?: number }`. */
export function typeOf(schema: unknown, depth = 0): string {
  if (!isSchema(schema)) return schema === false ? "never" : "any";
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if ("const" in schema) return JSON.stringify(schema.const);
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = schema[key];
    if (Array.isArray(options)) return unique(options.map((o) => typeOf(o, depth))).join(" | ");
  }
  if (Array.isArray(schema.allOf))
    return schema.allOf.map((o) => typeOf(o, depth)).join(" & ") || "any";
  const type = schema.type;
  if (Array.isArray(type))
    return unique(type.map((t: unknown) => typeOf({ ...schema, type: t }, depth))).join(" | ");
  switch (type) {
    case "array": {
      const item = typeOf(schema.items, depth);
      return / /.test(item) && !item.startsWith("{") ? `(${item})[]` : `${item}[]`;
    }
    case "object":
      return objectType(schema, depth);
    case "string":
    case "number":
    case "integer":
    case "boolean":
    case "null":
      return type;
    default:
      return isSchema(schema.properties) ? objectType(schema, depth) : "any";
  }
}

function objectType(schema: Schema, depth: number): string {
  const fields = fieldsOf(schema, depth + 1);
  if (fields.length === 0) {
    const extra = schema.additionalProperties;
    return isSchema(extra) ? `{ [key: string]: ${typeOf(extra, depth + 1)} }` : "{}";
  }
  if (depth >= MAX_DEPTH) return "{…}";
  return `{ ${fields.join(", ")} }`;
}

/** `name: type` per property, `?` where it is not required, in the schema's order. */
function fieldsOf(schema: Schema, depth: number): string[] {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(properties).map(([name, property]) => {
    const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
    return `${key}${required.has(name) ? "" : "?"}: ${typeOf(property, depth)}`;
  });
}

/** The arguments of a tool: its input object's fields, or `input: <type>` for another input. */
export function argumentsOf(input: unknown): string {
  if (!isSchema(input)) return "";
  const isObject =
    input.type === "object" || (input.type === undefined && isSchema(input.properties));
  return isObject ? fieldsOf(input, 1).join(", ") : `input: ${typeOf(input)}`;
}

/** `module/tool(args) → output`, the output left out when the tool declares none. */
export function toolSignature(tool: {
  readonly module: string;
  readonly tool: string;
  readonly input?: unknown;
  readonly output?: unknown;
}): string {
  const head = `${tool.module}/${tool.tool}(${argumentsOf(tool.input)})`;
  return tool.output === undefined ? head : `${head} → ${typeOf(tool.output)}`;
}

/** Each property's description, for the lines under a signature. */
export function argumentNotes(input: unknown): string[] {
  if (!isSchema(input) || !isSchema(input.properties)) return [];
  return Object.entries(input.properties)
    .filter(([, p]) => isSchema(p) && typeof p.description === "string" && p.description !== "")
    .map(([name, p]) => `${name}: ${String((p as Schema).description)}`);
}

const unique = (items: string[]): string[] => [...new Set(items)];
