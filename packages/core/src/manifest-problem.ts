/**
 * One problem found in a manifest: where it is, what was found there, the rule it breaks, and
 * what to write instead. `code` is permanent (scripts and the bad-manifest corpus match on it);
 * the words may improve.
 */
import { ErrorCode, MeshError } from "@mesh/protocol";

/** Every rule a manifest is checked against, by its permanent id, with the rule in words. */
export const ManifestRule = {
  // The text itself.
  syntax: "the text is well-formed YAML or JSON",
  "duplicate-key": "a key appears once in its mapping",
  "key-not-text": "every key is plain text",
  "too-large": "a manifest is at most 128 KiB and 5,000 lines, and holds at most 20,000 values",
  "too-deep": "a manifest nests at most 64 levels and holds no cycles",
  // Field by field (the schema).
  required: "a required field is present",
  type: "each field has the type the schema gives it",
  "unknown-field": "only the fields of the manifest schema are used",
  "not-empty": "the field is not empty",
  "number-range": "a number is a whole number of 0 or more",
  "name-valid":
    "a name is a lowercase letter, then lowercase letters, digits or -, at most 63 characters",
  "module-name-reserved":
    "a module is not named after one of the mesh's own principals, `all` or `mesh`, nor starts `mcp-` (a narrowed mcp credential)",
  "language-known":
    'a bundle\'s language is one a build module of the mesh builds ("typescript", "python", "go" ship with it) or "prebuilt"',
  "digest-valid": "a digest is the lowercase hex SHA-256 of the archive: 64 characters of 0-9a-f",
  "bundle-path-relative": 'a path inside a bundle is relative, with no empty, "." or ".." part',
  "secret-path-inside":
    'a secret\'s path is relative to the node\'s secrets folder for the module, with no empty, "." or ".." part',
  "prebuilt-source-inside":
    'a prebuilt bundle\'s source is a path inside the module\'s source, relative, with no empty, "." or ".." part',
  "config-key-valid": "a config key is a lowercase letter, then lowercase letters, digits, _ or -",
  "secret-name-valid":
    "a secret name is a lowercase letter, then lowercase letters, digits, _ or -",
  "env-name-valid": "an environment variable's name is a letter or _, then letters, digits or _",
  "env-reserved": "variables starting with MESH_ are set by the mesh, never by a manifest",
  "read-well-formed": 'a read names a state as "<module>/<state>"',
  "call-well-formed": 'a call names a tool as "<module>/<tool>"',
  "restart-on-valid": 'a restart-on entry is "config" or a resource id "<module>.<id>"',
  format: "the value has the form the schema gives it",
  value: "the value is one the schema allows",
  // Across fields.
  "name-unique": "no two bundles, processes or states of a manifest share a name",
  "no-duplicates": "a list names each entry once",
  "process-bundle-exists": "a process runs a bundle the manifest declares",
  "process-run-needed":
    "a process without run runs its bundle's first entrypoint with the bundle's language's interpreter, so that bundle needs one and a language the mesh can run",
  "bundle-used": "every bundle is run by a process or loaded by the tool runtime",
  "bundle-loaded-or-run":
    "a bundle is either loaded by the tool runtime (it has loads) or run by a process, not both",
  "loads-not-empty": "a bundle's loads, when present, names at least one file",
  "loads-typescript":
    "the tool runtime loads typescript (and prebuilt JavaScript) bundles only; a python or go module serves its tools from its own process",
  "load-is-entrypoint":
    "a typescript bundle loads files the builder builds: each load is one of its entrypoints",
  "entrypoint-needed": "a typescript bundle has at least one entrypoint for the builder to build",
  "entrypoint-extension": "a typescript entrypoint ends in .ts, .mts, .tsx, .js, .mjs or .jsx",
  "entrypoint-built-clash": "no two entrypoints of a bundle are built to the same file",
  "prebuilt-source": "a prebuilt bundle says where its archive comes from (source)",
  "prebuilt-digest": "a prebuilt bundle gives its archive's digest",
  "read-not-own": "a module reads other modules' states; its own it keeps read-write already",
  "mesh-part-only":
    "only the mesh's own parts (mesh-indexer, mesh-builder, mesh-assigner) name the mesh's buckets as \"mesh/<name>\"",
  "mesh-resource-known":
    'a "mesh/<name>" names one of the mesh\'s buckets, its object store or a stream it has',
  "mesh-resource-direction":
    "the conditions stream is only read and the build modules' asks only written; buckets and the store both",
  "restart-on-exists":
    "a restart-on entry of the module's own names a resource the manifest declares",
  "restart-on-config-declared": 'restart-on "config" is for a module that declares config keys',
  "secret-path-unique": "no two secrets are written to one path",
  "config-schema-valid":
    "a config key's rules can be met: its pattern is a regular expression, its lower bounds are not above its upper ones",
  "config-default-matches": "a config key's default keeps the rules the key declares",
  "runtime-one-bundle": "the runtime module node-tools declares exactly one bundle",
  "runtime-one-entrypoint": "the runtime's bundle has exactly one entrypoint",
  "runtime-language":
    "the runtime's bundle is in a language the mesh can run (typescript, run by node)",
  "runtime-broker-secret":
    "the runtime module declares its broker own-secret, where its credential is written",
  "runtime-no-loads": "the runtime's bundle is run, not loaded: it has no loads",
  "runtime-no-processes":
    "the runtime module declares no processes: the mesh composes its one process",
  "runtime-no-filter": "the runtime module has no filter: it runs wherever it is assigned",
} as const;
export type ManifestRuleId = keyof typeof ManifestRule;

/** A place in a manifest, as keys and indexes from the top. */
export type ManifestPath = readonly (string | number)[];

export interface ManifestProblem {
  /** The rule's permanent id, e.g. `process-bundle-exists`. */
  readonly code: ManifestRuleId;
  /** Where, readable: `processes[1].bundle`; empty for the manifest as a whole. */
  readonly path: string;
  /** Where, as keys and indexes, for programs. */
  readonly at: ManifestPath;
  /** What was found there (shortened when long); absent when nothing was. */
  readonly value?: unknown;
  /** The rule broken, in words. */
  readonly rule: string;
  /** What failed, quoting the value. */
  readonly message: string;
  /** What to write instead. */
  readonly fix: string;
  /** Where in the text, from 1, when the manifest was read from text. */
  readonly line?: number;
  readonly column?: number;
}

/** Builds a problem; `value` is kept as a short, JSON-safe preview. */
export function problem(
  code: ManifestRuleId,
  at: ManifestPath,
  found: { value?: unknown; missing?: boolean },
  message: string,
  fix: string,
): ManifestProblem {
  const base = { code, path: formatPath(at), at: [...at], rule: ManifestRule[code], message, fix };
  return found.missing === true || !("value" in found)
    ? base
    : { ...base, value: preview(found.value) };
}

/** `processes[1].bundle`, `config.greeting`, `env["A B"]`; empty for the top. */
export function formatPath(at: ManifestPath): string {
  let out = "";
  for (const part of at) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(part)) out += out === "" ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

/** A value as a refusal can quote it: short, and never throwing. */
export function quote(value: unknown): string {
  if (value === undefined) return "nothing";
  const shown = preview(value);
  return typeof shown === "string" && typeof value !== "string" ? shown : safeJson(shown);
}

/** One line per problem: where, what failed, what to write instead. */
export function formatProblem(p: ManifestProblem): string {
  const where = p.line === undefined ? "" : `${p.line}:${p.column ?? 1} `;
  return `${where}${p.path === "" ? "(manifest)" : p.path}: ${p.message}; ${p.fix} [${p.code}]`;
}

/** The error for a refused manifest: code MANIFEST_INVALID, every problem in the message. */
export function manifestInvalid(
  problems: readonly ManifestProblem[],
  where: { module?: string; path?: string } = {},
): MeshError {
  const subject =
    where.path ??
    (where.module === undefined
      ? "the manifest"
      : `the manifest of ${JSON.stringify(where.module)}`);
  const lines = problems.map((p) => `  ${formatProblem(p)}`);
  return new MeshError(
    ErrorCode.MANIFEST_INVALID,
    `${subject} has ${problems.length} problem(s); fix each and check it again:\n${lines.join("\n")}`,
    {
      ...(where.module === undefined ? {} : { module: where.module }),
      ...(where.path === undefined ? {} : { path: where.path }),
    },
  );
}

const MAX_SHOWN = 200;

/**
 * What was found, small enough to print and safe to serialise: long strings are cut, large or
 * exotic values are described rather than copied.
 */
function preview(value: unknown): unknown {
  switch (typeof value) {
    case "string":
      return value.length > MAX_SHOWN ? `${value.slice(0, MAX_SHOWN)}…` : value;
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "boolean":
      return value;
    case "bigint":
      return `${value}n`;
    case "undefined":
      return undefined;
    case "function":
    case "symbol":
      return `(a ${typeof value})`;
    case "object":
      break;
  }
  if (value === null) return null;
  if (value instanceof Uint8Array) return `(binary data, ${value.length} bytes)`;
  const json = safeJson(value);
  if (json.length <= MAX_SHOWN && !json.startsWith("(")) return JSON.parse(json) as unknown;
  return Array.isArray(value)
    ? `(a list of ${value.length} entries)`
    : `(a mapping with keys ${Object.keys(value)
        .slice(0, 8)
        .map((k) => JSON.stringify(k))
        .join(", ")}${Object.keys(value).length > 8 ? ", …" : ""})`;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "(nothing)";
  } catch {
    return "(a value that cannot be written as JSON)";
  }
}
