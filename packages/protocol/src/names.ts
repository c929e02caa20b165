/**
 * Name rules. A name enters the mesh in many places (a manifest, a flag, a key read off the bus);
 * each of them checks it here, so the rule and its refusal read the same everywhere.
 */
import { ErrorCode, MeshError } from "./errors.js";

/** Module, node and state names: a lowercase letter, then lowercase letters, digits and `-`. */
export const NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

/** Tool names may also use `_`, as function names often do; never `.`, which splits subjects. */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,62}$/;

/** Config keys and secret names: like tool names. */
export const KEY_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,62}$/;

/** Build ids: lowercase letters, digits and `-`, starting with either. */
export const BUILD_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * A bundle's language: lowercase letters and digits, at most 31 (no `-`, so the build module
 * `mesh-build-<language>` is a module name and reads back as one language).
 */
export const LANGUAGE_PATTERN = /^[a-z][a-z0-9]{0,30}$/;

/** Ask ids: like build ids. */
export const ASK_ID_PATTERN = BUILD_ID_PATTERN;

/** `all` stands for every node in assignments and puts, so no node may be called that. */
export const ALL_NODES = "all";

/** What kind of name is being checked; used in messages and as the refusal's field. */
export type NameKind =
  | "module"
  | "node"
  | "state"
  | "condition"
  | "tool"
  | "config key"
  | "secret"
  | "build"
  | "ask"
  | "bundle"
  | "process"
  | "language";

const RULES: Record<NameKind, { pattern: RegExp; rule: string; example: string }> = {
  module: { pattern: NAME_PATTERN, rule: "^[a-z][a-z0-9-]{0,62}$", example: "hello-world" },
  node: { pattern: NAME_PATTERN, rule: "^[a-z][a-z0-9-]{0,62}$", example: "edge-01" },
  state: { pattern: NAME_PATTERN, rule: "^[a-z][a-z0-9-]{0,62}$", example: "counts" },
  condition: { pattern: NAME_PATTERN, rule: "^[a-z][a-z0-9-]{0,62}$", example: "disk-full" },
  bundle: { pattern: NAME_PATTERN, rule: "^[a-z][a-z0-9-]{0,62}$", example: "tools" },
  process: { pattern: NAME_PATTERN, rule: "^[a-z][a-z0-9-]{0,62}$", example: "daemon" },
  language: { pattern: LANGUAGE_PATTERN, rule: "^[a-z][a-z0-9]{0,30}$", example: "python" },
  tool: { pattern: TOOL_NAME_PATTERN, rule: "^[a-z][a-z0-9_-]{0,62}$", example: "greet" },
  "config key": { pattern: KEY_NAME_PATTERN, rule: "^[a-z][a-z0-9_-]{0,62}$", example: "greeting" },
  secret: { pattern: KEY_NAME_PATTERN, rule: "^[a-z][a-z0-9_-]{0,62}$", example: "api-token" },
  build: { pattern: BUILD_ID_PATTERN, rule: "^[a-z0-9][a-z0-9-]{0,63}$", example: "3-1f2e3d4c" },
  ask: { pattern: ASK_ID_PATTERN, rule: "^[a-z0-9][a-z0-9-]{0,63}$", example: "a-1f2e3d4c" },
};

/** Each pattern's rule in words, for refusals (tool, config key and secret share one source). */
const RULE_WORDS: Record<string, string> = {
  [NAME_PATTERN.source]:
    "a lowercase letter first, then lowercase letters, digits or -, at most 63 characters",
  [TOOL_NAME_PATTERN.source]:
    "a lowercase letter first, then lowercase letters, digits, _ or -, at most 63 characters",
  [LANGUAGE_PATTERN.source]:
    "a lowercase letter first, then lowercase letters or digits, at most 31 characters",
  [BUILD_ID_PATTERN.source]:
    "a lowercase letter or digit first, then lowercase letters, digits or -, at most 64 characters",
};

/** The problem with `value` as a name of `kind`, or undefined when it is a good one. */
export function nameProblem(kind: NameKind, value: unknown): string | undefined {
  const { pattern, rule, example } = RULES[kind];
  if (typeof value !== "string") {
    return `a ${kind} name must be a string matching ${rule}, got ${describe(value)}; write e.g. "${example}"`;
  }
  if (!pattern.test(value)) {
    return (
      `the ${kind} name ${JSON.stringify(value)} does not match ${rule} ` +
      `(${RULE_WORDS[pattern.source] ?? rule}); ` +
      `write e.g. "${kind === "language" ? languageLike(value, example) : suggest(value, example)}"`
    );
  }
  if ((kind === "node" || kind === "module") && value === ALL_NODES) {
    return `"all" is not a ${kind} name: it means every node in assignments and puts; pick another name, e.g. "${example}"`;
  }
  return undefined;
}

/** Whether `value` is a good name of `kind`. */
export function isName(kind: NameKind, value: unknown): value is string {
  return nameProblem(kind, value) === undefined;
}

/** Returns `value` when it is a good name of `kind`; throws INVALID_NAME saying why otherwise. */
export function checkName(kind: NameKind, value: unknown): string {
  const problem = nameProblem(kind, value);
  if (problem !== undefined) {
    throw new MeshError(ErrorCode.INVALID_NAME, problem, {
      ...(kind === "module" && typeof value === "string" ? { module: value } : {}),
      ...(kind === "node" && typeof value === "string" ? { node: value } : {}),
    });
  }
  return value as string;
}

export const checkModuleName = (value: unknown): string => checkName("module", value);
export const checkNodeName = (value: unknown): string => checkName("node", value);

/** A best guess at the name the user meant, for the "write instead" part of a refusal. */
function suggest(value: string, fallback: string): string {
  const guess = nameLike(value, fallback);
  return guess === ALL_NODES ? fallback : guess;
}

/** A language name close to `value`: lowercased, letters and digits only, from its first letter. */
function languageLike(value: string, fallback: string): string {
  const guess = value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "")
    .replace(/^[^a-z]+/, "");
  return guess.slice(0, 31) || fallback;
}

/**
 * A valid name close to `value`: lowercased, each run of other characters turned into `-`, from
 * its first letter, at most 63 characters; `fallback` when nothing is left. With `key`, a config
 * key or secret name: `_` stays, and a trailing `-` too.
 */
export function nameLike(
  value: unknown,
  fallback: string,
  options: { readonly key?: boolean } = {},
): string {
  if (typeof value !== "string") return fallback;
  const lowered = value
    .toLowerCase()
    .replace(options.key === true ? /[^a-z0-9_-]+/g : /[^a-z0-9-]+/g, "-");
  const guess = (options.key === true ? lowered : lowered.replace(/-+$/, "")).replace(
    /^[^a-z]+/,
    "",
  );
  return guess.slice(0, 63) || fallback;
}

/** A short account of a value that is not a string; never throws (a refusal must not fail). */
function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  let shown: string | undefined;
  try {
    shown = typeof value === "bigint" ? `${value}n` : JSON.stringify(value);
  } catch {
    // A cycle or a throwing toJSON: the type alone says enough.
  }
  return shown === undefined ? typeof value : `${typeof value} ${shown.slice(0, 80)}`;
}
