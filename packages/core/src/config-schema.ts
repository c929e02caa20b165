/**
 * Typed config: the part of JSON Schema a config key may declare (`type`, `enum`, `minimum`,
 * `pattern`, `items` …, see `ConfigValueSchema` in @mesh/protocol), and the one check of a value
 * against it. `mesh manifest check` checks each key's default with it, `mesh config set` each
 * value an operator sets. A key that declares no rule takes any JSON value.
 */
import type { ConfigDeclaration, ConfigJsonType, ConfigValueSchema } from "@mesh/protocol";
import { problem, quote, type ManifestProblem } from "./manifest-problem.js";

/** Where a value breaks a declared rule: the rule's keyword, its limit, and what was found. */
export interface ConfigViolation {
  /** Where in the value, `""` for the value itself, `[2]` for an array's third item. */
  readonly path: string;
  /** The JSON Schema keyword broken: `type`, `maximum`, `pattern`, … */
  readonly rule: keyof ConfigValueSchema;
  /** The rule as declared, e.g. `maximum: 100`. */
  readonly declared: string;
  /** What is wrong, quoting the value. */
  readonly message: string;
}

/** The value's JSON type as JSON Schema names it (`integer` for a whole number). */
export function jsonTypeOf(value: unknown): ConfigJsonType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string") return "string";
  if (typeof value === "boolean") return "boolean";
  return "object";
}

/** The keywords that are rules (a declaration's description and default are not). */
export function declaresRules(declaration: ConfigValueSchema): boolean {
  return Object.keys(declaration).some((k) => k !== "description" && k !== "default");
}

/** Every rule `value` breaks, in the order the keywords are listed; empty when it matches. */
export function checkConfigValue(
  schema: ConfigValueSchema,
  value: unknown,
  path = "",
): ConfigViolation[] {
  const out: ConfigViolation[] = [];
  const say = (rule: keyof ConfigValueSchema, message: string): void => {
    out.push({ path, rule, declared: `${rule}: ${JSON.stringify(schema[rule])}`, message });
  };
  const shown = preview(value);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual = jsonTypeOf(value);
    const fits = types.includes(actual) || (actual === "integer" && types.includes("number"));
    if (!fits) {
      say("type", `${shown} is ${article(actual)}, not ${types.map(article).join(" or ")}`);
      return out; // the other rules say nothing useful about a value of the wrong type
    }
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => sameJson(e, value)))
    say("enum", `${shown} is not one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`);
  if (schema.const !== undefined && !sameJson(schema.const, value))
    say("const", `${shown} is not ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") numberRules(schema, value, shown, say);
  if (typeof value === "string") stringRules(schema, value, shown, say);
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      say("minItems", `${shown} has ${value.length} item(s), fewer than ${schema.minItems}`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      say("maxItems", `${shown} has ${value.length} item(s), more than ${schema.maxItems}`);
    if (schema.uniqueItems === true) {
      const seen = new Set(value.map((v) => JSON.stringify(v)));
      if (seen.size !== value.length) say("uniqueItems", `${shown} holds an item twice`);
    }
    const items = schema.items;
    if (items !== undefined)
      value.forEach((item, i) => out.push(...checkConfigValue(items, item, `${path}[${i}]`)));
  }
  return out;
}

type Say = (rule: keyof ConfigValueSchema, message: string) => void;

function numberRules(schema: ConfigValueSchema, value: number, shown: string, say: Say): void {
  if (schema.minimum !== undefined && value < schema.minimum)
    say("minimum", `${shown} is less than ${schema.minimum}`);
  if (schema.maximum !== undefined && value > schema.maximum)
    say("maximum", `${shown} is more than ${schema.maximum}`);
  if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum)
    say("exclusiveMinimum", `${shown} is not more than ${schema.exclusiveMinimum}`);
  if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum)
    say("exclusiveMaximum", `${shown} is not less than ${schema.exclusiveMaximum}`);
  if (schema.multipleOf !== undefined && !Number.isInteger(value / schema.multipleOf))
    say("multipleOf", `${shown} is not a multiple of ${schema.multipleOf}`);
}

function stringRules(schema: ConfigValueSchema, value: string, shown: string, say: Say): void {
  const length = [...value].length;
  if (schema.minLength !== undefined && length < schema.minLength)
    say("minLength", `${shown} is ${length} character(s) long, shorter than ${schema.minLength}`);
  if (schema.maxLength !== undefined && length > schema.maxLength)
    say("maxLength", `${shown} is ${length} character(s) long, longer than ${schema.maxLength}`);
  if (schema.pattern !== undefined) {
    const re = compile(schema.pattern);
    if (re !== undefined && !re.test(value))
      say("pattern", `${shown} does not match /${schema.pattern}/`);
  }
}

/**
 * One line for an operator: `mesh config set` refuses with it. Names the key, every rule broken
 * as declared, and what to do.
 */
export function describeConfigViolations(
  module: string,
  key: string,
  violations: readonly ConfigViolation[],
): string {
  const parts = violations.map(
    (v) => `${v.path === "" ? "" : `${v.path}: `}${v.message} (the rule ${v.declared})`,
  );
  return `${module}'s config key ${JSON.stringify(key)} declares rules the value breaks: ${parts.join("; ")}; set a value that keeps them (\`mesh config get ${module} ${key}\` shows the declaration)`;
}

/**
 * The problems of a manifest's `config` section beyond its shape: a pattern that is not a
 * regular expression, a range whose bounds cross, and a default that breaks its own key's rules.
 */
export function configProblems(config: unknown): ManifestProblem[] {
  if (config === null || typeof config !== "object" || Array.isArray(config)) return [];
  const out: ManifestProblem[] = [];
  for (const [key, raw] of Object.entries(config as Record<string, unknown>)) {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) continue;
    const d = raw as ConfigDeclaration;
    const at = ["config", key];
    out.push(...schemaOwnProblems(d, at));
    if (!("default" in d) || d.default === undefined) continue;
    const broken = safeCheck(d, d.default);
    if (broken.length > 0) {
      out.push(
        problem(
          "config-default-matches",
          [...at, "default"],
          { value: d.default },
          `the default of ${quote(key)} breaks its own rules: ${broken.map((v) => `${v.path === "" ? "" : `${v.path}: `}${v.message} (${v.declared})`).join("; ")}`,
          "give a default that keeps the key's rules, or change the rules",
        ),
      );
    }
  }
  return out;
}

function schemaOwnProblems(d: ConfigValueSchema, at: (string | number)[]): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  if (typeof d.pattern === "string" && compile(d.pattern) === undefined) {
    out.push(
      problem(
        "config-schema-valid",
        [...at, "pattern"],
        { value: d.pattern },
        `${quote(d.pattern)} is not a regular expression`,
        'write a JavaScript regular expression without the slashes, e.g. "^[a-z]+$"',
      ),
    );
  }
  const crossed = (low: unknown, high: unknown): boolean =>
    typeof low === "number" && typeof high === "number" && low > high;
  for (const [low, high] of [
    ["minimum", "maximum"],
    ["minLength", "maxLength"],
    ["minItems", "maxItems"],
  ] as const) {
    if (crossed(d[low], d[high])) {
      out.push(
        problem(
          "config-schema-valid",
          [...at, low],
          { value: d[low] },
          `${low} ${String(d[low])} is above ${high} ${String(d[high])}, so no value fits`,
          `make ${low} at most ${high}`,
        ),
      );
    }
  }
  if (d.items !== null && typeof d.items === "object" && !Array.isArray(d.items))
    out.push(...schemaOwnProblems(d.items, [...at, "items"]));
  return out;
}

/** The check on a declaration that may not have its shape yet (the schema problems say why). */
function safeCheck(schema: ConfigValueSchema, value: unknown): ConfigViolation[] {
  try {
    return checkConfigValue(schema, value);
  } catch {
    return [];
  }
}

const compiled = new Map<string, RegExp | undefined>();
function compile(pattern: string): RegExp | undefined {
  if (!compiled.has(pattern)) {
    let re: RegExp | undefined;
    try {
      re = new RegExp(pattern, "u");
    } catch {
      re = undefined;
    }
    if (compiled.size > 1000) compiled.clear();
    compiled.set(pattern, re);
  }
  return compiled.get(pattern);
}

function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

const article = (type: string): string =>
  type === "null" ? "null" : `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
