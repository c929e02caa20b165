/**
 * The manifest schema's issues, told as manifest problems: each gets the rule id a program can
 * match on, and a fix that says what to write there — not the schema library's own words.
 */
import { RESERVED_ENV_PREFIX, manifestFields, nameLike } from "@mesh/protocol";
import {
  problem,
  quote,
  type ManifestPath,
  type ManifestProblem,
  type ManifestRuleId,
} from "./manifest-problem.js";
import { closest, envLike, keyLike, lastPart, oneOf, refLike, relativeLike } from "./suggest.js";

/** What this file reads of a schema issue; the schema library's issues have this shape. */
export interface SchemaIssue {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly input?: unknown;
  readonly expected?: string;
  readonly keys?: readonly string[];
  readonly values?: readonly unknown[];
  readonly origin?: string;
  readonly minimum?: unknown;
}

/** The problems of a manifest's schema issues, one per issue (one per key for unknown fields). */
export function schemaProblems(issues: readonly SchemaIssue[], input: unknown): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  for (const issue of issues) {
    const at = issue.path.filter((p): p is string | number => typeof p !== "symbol");
    if (issue.code === "unrecognized_keys") {
      const holder = valueAt(input, at);
      for (const key of issue.keys ?? [])
        out.push(unknownField([...at, key], key, fieldOf(holder, key)));
      continue;
    }
    out.push(oneProblem(issue, at));
  }
  return out;
}

function oneProblem(issue: SchemaIssue, at: ManifestPath): ManifestProblem {
  const value = issue.input;
  switch (issue.code) {
    case "invalid_type":
      return typeProblem(at, value, issue.expected ?? "value");
    case "invalid_format":
      return formatProblem(at, value);
    case "invalid_key":
      return keyProblem(at, value);
    case "invalid_value":
      return valueProblem(at, value, (issue.values ?? []).map(String));
    case "too_small":
      return issue.origin === "number" ? rangeProblem(at, value) : emptyProblem(at, value);
    case "too_big":
    case "not_multiple_of":
      return rangeProblem(at, value);
    default:
      return problem(
        "value",
        at,
        { value },
        `${describeField(at)} is ${quote(value)}, which the schema does not allow`,
        "see docs/manifest.schema.json for what this field takes",
      );
  }
}

/** A value of the wrong kind, or none where one is required. */
function typeProblem(at: ManifestPath, value: unknown, expected: string): ManifestProblem {
  if (value === undefined) {
    return problem(
      "required",
      at,
      { missing: true },
      `${describeField(at)} is missing`,
      `add ${exampleOf(at)}`,
    );
  }
  if (at.length === 0) {
    return problem(
      "type",
      at,
      { value },
      `a manifest is a mapping of fields, and this one is ${kindOfValue(value)}`,
      'start from "module: <name>" at the top level, then the fields the module needs',
    );
  }
  return problem(
    "type",
    at,
    { value },
    `${describeField(at)} is ${kindOfValue(value)} ${quote(value)}, where ${article(expected)} is expected`,
    typeFix(expected, value, at),
  );
}

/** A value that is not one of the values the field takes. */
function valueProblem(at: ManifestPath, value: unknown, values: string[]): ManifestProblem {
  if (at[at.length - 1] === "language") {
    return problem(
      "language-known",
      at,
      { value },
      `the language ${quote(value)} is not one the mesh builds or takes`,
      `write ${oneOf(values)}${typeof value === "string" && /^(ts|js|javascript|node)$/i.test(value) ? ' (for TypeScript and JavaScript: "typescript")' : ""}`,
    );
  }
  return problem(
    "value",
    at,
    { value },
    `${describeField(at)} is ${quote(value)}`,
    `write ${oneOf(values)}`,
  );
}

function rangeProblem(at: ManifestPath, value: unknown): ManifestProblem {
  return problem(
    "number-range",
    at,
    { value },
    `${describeField(at)} is ${quote(value)}`,
    "write a whole number of 0 or more",
  );
}

function emptyProblem(at: ManifestPath, value: unknown): ManifestProblem {
  const last = at[at.length - 1];
  const field = typeof last === "string" ? last : "entry";
  return problem(
    "not-empty",
    at,
    { value },
    `${describeField(at)} is empty`,
    field === "run"
      ? 'give the command, e.g. ["node", "main.js"], or leave run out to run the first entrypoint'
      : `give a value, or leave ${JSON.stringify(field)} out`,
  );
}

/** Where a value stands, as the pattern rules below read it. */
interface Place {
  readonly at: ManifestPath;
  readonly top: string | number | undefined;
  /** The field of an entry in a list at the top (`processes[0].bundle` → "bundle"). */
  readonly field: string | number | undefined;
  readonly last: string | number | undefined;
}

/** A pattern the value must match at some place: the rule, and what to say when it does not. */
interface FormatRule {
  readonly code: ManifestRuleId;
  readonly applies: (place: Place) => boolean;
  readonly message: (value: unknown, place: Place) => string;
  readonly fix: (value: unknown, place: Place) => string;
}

/** The name kind a `name-valid` value at a place is, and an example of a good one. */
function nameKind({ top, field }: Place): [kind: string, example: string] {
  if (top === "bundles" || field === "bundle") return ["bundle", "tools"];
  return top === "processes" ? ["process", "daemon"] : ["state", "counts"];
}

/** The pattern rules, first match wins; a value that fits none gets the generic `format`. */
const FORMAT_RULES: readonly FormatRule[] = [
  {
    code: "name-valid",
    applies: ({ at, top }) => at.length === 1 && top === "module",
    message: (value) => `the module name ${quote(value)} is not a valid name`,
    fix: (value) => `write e.g. ${quote(nameLike(value, "hello"))}`,
  },
  {
    code: "name-valid",
    applies: ({ top, field, last }) =>
      last === "name" || (top === "processes" && field === "bundle"),
    message: (value, place) => `the ${nameKind(place)[0]} name ${quote(value)} is not a valid name`,
    fix: (value, place) => `write e.g. ${quote(nameLike(value, nameKind(place)[1]))}`,
  },
  {
    code: "read-well-formed",
    applies: ({ top }) => top === "reads",
    message: (value) => `the read ${quote(value)} does not name a state as "<module>/<state>"`,
    fix: (value) =>
      `write e.g. ${quote(refLike(value, "counter/counts"))}: the module that keeps the state, a /, then the state's name`,
  },
  {
    code: "call-well-formed",
    applies: ({ top }) => top === "calls",
    message: (value) => `the call ${quote(value)} does not name a tool as "<module>/<tool>"`,
    fix: (value) =>
      `write e.g. ${quote(refLike(value, "hello/greet"))}: the module that serves the tool, a /, then the tool's name`,
  },
  {
    code: "digest-valid",
    applies: ({ last }) => last === "digest",
    message: (value) => `the digest ${quote(value)} is not a lowercase hex SHA-256`,
    fix: () =>
      "write the archive's SHA-256 as 64 lowercase hex characters (what `sha256sum` prints first), without a sha256: prefix",
  },
  {
    code: "bundle-path-relative",
    applies: ({ field }) => field === "entrypoints" || field === "loads",
    message: (value) =>
      `the path ${quote(value)} could leave the bundle's folder or is not a plain relative path`,
    fix: (value) =>
      `write a path relative to the bundle's folder, e.g. ${quote(relativeLike(value))}`,
  },
  {
    code: "secret-path-inside",
    applies: ({ top, last }) => top === "own-secrets" && last === "path",
    message: (value) =>
      `the secret's path ${quote(value)} is not a plain path inside the module's secrets folder`,
    fix: (_value, { at }) =>
      `write a path relative to the node's secrets folder for the module, such as ${quote(String(at[1]))}, with no leading / and no "." or ".." part; the node writes it under <root>/secrets/<module>/`,
  },
  {
    code: "prebuilt-source-inside",
    applies: ({ top, last }) => top === "bundles" && last === "source",
    message: (value) =>
      `the prebuilt source ${quote(value)} is not a path inside the module's source`,
    fix: (value) =>
      `put the archive in the module's folder and name it relative to the manifest, e.g. ${quote(`dist/${lastPart(value)}`)}`,
  },
  {
    code: "language-known",
    applies: ({ top, last }) => top === "bundles" && last === "language",
    message: (value) => `the language ${quote(value)} is not a language name`,
    fix: (value) =>
      `write "typescript", "python", "go" (or another language this mesh has a build module for), or "prebuilt"${typeof value === "string" && /^(ts|js|javascript|node)$/i.test(value) ? ' (for TypeScript and JavaScript: "typescript")' : ""}`,
  },
  {
    code: "restart-on-valid",
    applies: ({ field }) => field === "restart-on",
    message: (value) =>
      `the restart-on entry ${quote(value)} is neither "config" nor a resource id`,
    fix: () =>
      'write "config", or a resource id such as "hello.need-api-token" or "hello.bundle-tools"',
  },
];

/** A pattern the value does not match: which pattern depends on where the value is. */
function formatProblem(at: ManifestPath, value: unknown): ManifestProblem {
  const [top, , field] = at;
  const place: Place = { at, top, field, last: at[at.length - 1] };
  const rule = FORMAT_RULES.find((r) => r.applies(place));
  if (rule !== undefined)
    return problem(rule.code, at, { value }, rule.message(value, place), rule.fix(value, place));
  return problem(
    "format",
    at,
    { value },
    `${describeField(at)} is ${quote(value)}, which does not have the expected form`,
    "see docs/manifest.schema.json for the form this field takes",
  );
}

/** What a bad key of the config or own-secrets map is called, and an example of a good one. */
const KEY_KINDS = {
  config: { code: "config-key-valid", what: "config key", noun: "key", example: "greeting" },
  "own-secrets": {
    code: "secret-name-valid",
    what: "secret name",
    noun: "name",
    example: "api-token",
  },
} as const;

/** A key of a map (config, own-secrets, env) that is not a good key. */
function keyProblem(at: ManifestPath, key: unknown): ManifestProblem {
  const found = { value: key };
  const [top] = at;
  const map = top === "config" || top === "own-secrets" ? KEY_KINDS[top] : undefined;
  if (map !== undefined) {
    return problem(
      map.code,
      at,
      found,
      `the ${map.what} ${quote(key)} is not a valid ${map.noun}`,
      `write e.g. ${quote(keyLike(key, map.example))}`,
    );
  }
  if (typeof key === "string" && key.startsWith(RESERVED_ENV_PREFIX)) {
    return problem(
      "env-reserved",
      at,
      found,
      `the variable ${quote(key)} is one the mesh sets itself`,
      `use a name of your own, e.g. ${quote(key.slice(RESERVED_ENV_PREFIX.length) || "MY_SETTING")}; the mesh sets MESH_BROKER_FILE for a module that declares its broker secret`,
    );
  }
  return problem(
    "env-name-valid",
    at,
    found,
    `the variable name ${quote(key)} is not one a process environment can hold portably`,
    `write e.g. ${quote(envLike(key))}: a letter or _, then letters, digits or _`,
  );
}

function unknownField(at: ManifestPath, key: string, value: unknown): ManifestProblem {
  const known = knownFields(at.slice(0, -1));
  const guess = closest(key, known);
  return problem(
    "unknown-field",
    at,
    { value },
    `${JSON.stringify(key)} is not a field of ${whereIs(at.slice(0, -1))}`,
    guess !== undefined
      ? `write ${JSON.stringify(guess)} instead`
      : `remove it; the fields here are ${oneOf(known)}`,
  );
}

/** The fields an object at `at` may have, from the schema itself. */
function knownFields(at: ManifestPath): string[] {
  const [top] = at;
  return manifestFields(top === undefined ? undefined : String(top));
}

function whereIs(at: ManifestPath): string {
  if (at.length === 0) return "a manifest";
  const [top, key] = at;
  switch (String(top)) {
    case "bundles":
      return "a bundle";
    case "processes":
      return "a process";
    case "states":
      return "a state";
    case "config":
      return `the config key ${JSON.stringify(key)}`;
    case "own-secrets":
      return `the secret ${JSON.stringify(key)}`;
    case "filter":
      return "a filter";
    default:
      return JSON.stringify(String(top));
  }
}

function describeField(at: ManifestPath): string {
  return at.length === 0 ? "the manifest" : `the field ${JSON.stringify(formatAt(at))}`;
}

function formatAt(at: ManifestPath): string {
  return at
    .map((p) => (typeof p === "number" ? `[${p}]` : p))
    .join(".")
    .replace(/\.\[/g, "[");
}

/** What to add for a required field: the field and a value of the right kind. */
function exampleOf(at: ManifestPath): string {
  const last = at[at.length - 1];
  const [top] = at;
  switch (String(last)) {
    case "module":
      return '"module: <name>", e.g. "module: hello"';
    case "name":
      return top === "bundles"
        ? '"name: tools"'
        : top === "processes"
          ? '"name: daemon"'
          : '"name: counts"';
    case "language":
      return '"language: typescript" (or python, go, or prebuilt with source and digest)';
    case "bundle":
      return '"bundle: <name of one of the bundles>"';
    case "path":
      return `"path: /etc/${String(at[1])}"`;
    case "description":
      return '"description: <what the module changes on the machine>"';
    default:
      return JSON.stringify(String(last));
  }
}

function typeFix(expected: string, value: unknown, at: ManifestPath): string {
  const last = at[at.length - 1];
  switch (expected) {
    case "array":
      return typeof value === "string"
        ? `write a list, even of one: [${JSON.stringify(value)}]`
        : `write a list, e.g. ${listExample(last)}`;
    case "object":
    case "record":
      return `write a mapping (key: value) here${last === "own-secrets" ? ', e.g. {"broker": {"path": "broker.json"}}' : ""}`;
    case "string":
      return typeof value === "number" || typeof value === "boolean"
        ? `quote it: ${JSON.stringify(String(value))}`
        : "write text here";
    case "boolean":
      return typeof value === "string" && /^(yes|no|on|off|true|false)$/i.test(value)
        ? `write ${/^(yes|on|true)$/i.test(value) ? "true" : "false"} without quotes (YAML 1.2 reads ${JSON.stringify(value)} as text)`
        : "write true or false";
    case "number":
    case "int":
      return "write a whole number of 0 or more";
    default:
      return `write ${article(expected)} here`;
  }
}

function listExample(field: unknown): string {
  switch (field) {
    case "entrypoints":
    case "loads":
      return '["src/main.ts"]';
    case "run":
      return '["node", "main.js"]';
    case "reads":
      return '["counter/counts"]';
    case "calls":
      return '["hello/greet"]';
    case "restart-on":
      return '["config"]';
    default:
      return "[...]";
  }
}

function kindOfValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return "text";
  return `a ${typeof value}`;
}

function article(expected: string): string {
  const word =
    expected === "object" || expected === "record"
      ? "mapping"
      : expected === "array"
        ? "list"
        : expected === "string"
          ? "text"
          : expected;
  return word === "text" ? "text" : /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

function valueAt(input: unknown, at: ManifestPath): unknown {
  let here = input;
  for (const part of at) here = fieldOf(here, part);
  return here;
}

function fieldOf(holder: unknown, key: string | number): unknown {
  if (typeof holder !== "object" || holder === null) return undefined;
  return Object.hasOwn(holder, key) ? (holder as Record<string | number, unknown>)[key] : undefined;
}
