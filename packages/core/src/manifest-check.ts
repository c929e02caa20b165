/**
 * Checks a module's manifest and returns every problem at once: the schema's, field by field, and
 * the rules across fields that no schema can say (a process runs a declared bundle, the runtime
 * module's shape, names used once, …).
 *
 * The rules across fields read the manifest as it was given, not as the schema parsed it, so a
 * manifest with a schema problem in one place is still checked everywhere else. Each rule looks
 * only at values of the right type and leaves the rest to the schema, so a problem is told once.
 */
import {
  MESH_OWNER,
  Manifest,
  NARROWED_MCP_PREFIX,
  RESERVED_MODULE_NAMES,
  HOST_MODULE,
  RUNTIME_MODULE,
  type Manifest as ManifestValue,
} from "@mesh/protocol";
import { ErrorCode } from "@mesh/protocol";
import { problem, quote, type ManifestPath, type ManifestProblem } from "./manifest-problem.js";
import { bundleProblems } from "./manifest-rules/bundle.js";
import { processProblems } from "./manifest-rules/process.js";
import { runtimeProblems } from "./manifest-rules/runtime.js";
import { meshRefProblems } from "./manifest-rules/mesh-refs.js";
import {
  listDuplicates,
  listOf,
  readBundles,
  record,
  uniqueNames,
  type Bundle,
} from "./manifest-rules/shared.js";
import { schemaProblems } from "./schema-problems.js";
import { configProblems } from "./config-schema.js";
import { oneOf } from "./suggest.js";

export type ManifestCheck =
  | { readonly ok: true; readonly manifest: ManifestValue }
  | {
      readonly ok: false;
      readonly code: typeof ErrorCode.MANIFEST_INVALID;
      readonly problems: readonly ManifestProblem[];
    };

/** How deep a manifest may nest; deeper input is refused before anything walks it recursively. */
export const MAX_MANIFEST_DEPTH = 64;

/**
 * How many values (each mapping, list, text, number, …) a manifest may hold; more is refused
 * before any rule looks at them, so 10,000 bundles cost a count, not 10,000 checks.
 */
export const MAX_MANIFEST_VALUES = 20_000;

/**
 * Checks `input` (a manifest as parsed from YAML or JSON) against the schema and every rule across
 * fields. Never throws: whatever the input, the answer is the manifest or its problems, sorted by
 * where they are.
 */
export function checkManifest(input: unknown): ManifestCheck {
  const shape = shapeProblem(input);
  if (shape !== undefined) return refused([shape]);

  const parsed = Manifest.safeParse(input, { reportInput: true });
  const problems = [
    ...(parsed.success ? [] : schemaProblems(parsed.error.issues, input)),
    ...crossFieldProblems(input),
  ];
  if (problems.length === 0 && parsed.success) return { ok: true, manifest: parsed.data };
  return refused(problems);
}

/** A refusal with its problems deduplicated and in a stable order. */
export function refused(problems: readonly ManifestProblem[]): ManifestCheck {
  const seen = new Set<string>();
  const unique = problems.filter((p) => {
    const key = `${p.code}\u0000${p.path}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  unique.sort(
    (a, b) => comparePaths(a.at, b.at) || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0),
  );
  return { ok: false, code: ErrorCode.MANIFEST_INVALID, problems: unique };
}

function comparePaths(a: ManifestPath, b: ManifestPath): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i] as string | number;
    const y = b[i] as string | number;
    if (x === y) continue;
    if (typeof x === "number" && typeof y === "number") return x - y;
    return String(x) < String(y) ? -1 : 1;
  }
  return a.length - b.length;
}

/**
 * A cycle (a YAML alias pointing at its own ancestor) or nesting too deep, found before anything
 * else recurses into the input. The walk itself stops at the depth limit, so it cannot overflow.
 */
function shapeProblem(
  input: unknown,
  at: ManifestPath = [],
  ancestors = new Set<object>(),
  count = { values: 0 },
): ManifestProblem | undefined {
  count.values += 1;
  if (count.values > MAX_MANIFEST_VALUES) {
    return problem(
      "too-large",
      [],
      { missing: true },
      `the manifest holds more than ${MAX_MANIFEST_VALUES} values`,
      "keep data out of the manifest: ship it in a bundle, or as config defaults the module reads",
    );
  }
  if (typeof input !== "object" || input === null) return undefined;
  if (ancestors.has(input)) {
    return problem(
      "too-deep",
      at,
      { missing: true },
      "the manifest refers back into itself (a cycle)",
      "write the value out instead of pointing back at an enclosing one",
    );
  }
  if (at.length >= MAX_MANIFEST_DEPTH) {
    return problem(
      "too-deep",
      at,
      { missing: true },
      `the manifest nests deeper than ${MAX_MANIFEST_DEPTH} levels`,
      "flatten the value; no field of a manifest needs that depth",
    );
  }
  ancestors.add(input);
  const entries: [string | number, unknown][] = Array.isArray(input)
    ? input.map((v: unknown, i): [number, unknown] => [i, v])
    : Object.entries(input);
  for (const [key, child] of entries) {
    const found = shapeProblem(child, [...at, key], ancestors, count);
    if (found !== undefined) return found;
  }
  ancestors.delete(input);
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Rules across fields

function crossFieldProblems(input: unknown): ManifestProblem[] {
  const m = record(input);
  if (m === undefined) return [];
  const module = typeof m.module === "string" ? m.module : undefined;
  const bundles = readBundles(m.bundles);
  const secrets = record(m["own-secrets"]) ?? {};
  const isRuntime = module === RUNTIME_MODULE;
  const out = [
    ...moduleNameProblems(module),
    ...uniqueNames("bundles", listOf(m.bundles)),
    ...uniqueNames("processes", listOf(m.processes)),
    ...uniqueNames("states", listOf(m.states)),
  ];
  const processes = listOf(m.processes).map((raw) => record(raw));
  const runBundles = new Set(
    processes.map((p) => p?.bundle).filter((n): n is string => typeof n === "string"),
  );
  for (const b of bundles)
    out.push(
      ...bundleProblems(b, {
        // The runtime's bundle and the host build are run by the mesh, not by a process of theirs.
        runByTheMesh: isRuntime || module === HOST_MODULE,
        run: runBundles.has(b.name ?? ""),
      }),
    );
  out.push(...everyProcessProblems(m, processes, bundles, secrets));
  out.push(...listDuplicates(["reads"], m.reads), ...listDuplicates(["calls"], m.calls));
  out.push(...readProblems(module, m.reads), ...meshRefProblems(module, m.reads, m.writes));
  out.push(...listDuplicates(["writes"], m.writes));
  out.push(...secretPathProblems(secrets), ...configProblems(m.config));
  if (isRuntime) out.push(...runtimeProblems(m, bundles, secrets));
  return out;
}

/** A module named as one of the mesh's own principals, `all`, or a narrowed mcp credential. */
function moduleNameProblems(module: string | undefined): ManifestProblem[] {
  if (module === undefined) return [];
  const narrowedMcp = module.startsWith(NARROWED_MCP_PREFIX);
  if (!RESERVED_MODULE_NAMES.has(module) && !narrowedMcp) return [];
  const why =
    module === "all"
      ? `${quote(module)} means every node in assignments and puts, so it cannot name a module`
      : module === MESH_OWNER
        ? `${quote(module)} is the owner of the mesh's own buckets in a part's reads ("mesh/wants"), so it cannot name a module`
        : narrowedMcp
          ? `names starting ${quote(NARROWED_MCP_PREFIX)} are the credentials of \`mesh mcp --allow\`, whose inbox it would share`
          : `${quote(module)} is the name of one of the mesh's own principals, whose credential would share its inbox`;
  return [
    problem(
      "module-name-reserved",
      ["module"],
      { value: module },
      why,
      `pick another name, e.g. ${quote(`my-${module}`)}; the reserved names are ${oneOf([...RESERVED_MODULE_NAMES].sort())} and every name starting ${quote(NARROWED_MCP_PREFIX)}`,
    ),
  ];
}

function everyProcessProblems(
  m: Record<string, unknown>,
  processes: readonly (Record<string, unknown> | undefined)[],
  bundles: readonly Bundle[],
  secrets: Record<string, unknown>,
): ManifestProblem[] {
  const bundlesByName = new Map<string, Bundle>();
  for (const b of bundles)
    if (b.name !== undefined && !bundlesByName.has(b.name)) bundlesByName.set(b.name, b);
  const about = {
    module: typeof m.module === "string" ? m.module : undefined,
    bundlesKnown: m.bundles === undefined || Array.isArray(m.bundles),
    bundlesByName,
    secrets,
    processNames: new Set(
      processes.map((p) => p?.name).filter((n): n is string => typeof n === "string"),
    ),
    configDeclared: Object.keys(record(m.config) ?? {}).length > 0,
  };
  return processes.flatMap((p, index) => (p === undefined ? [] : processProblems(p, index, about)));
}

/** A module reads other modules' states; its own it reads without declaring them. */
function readProblems(module: string | undefined, reads: unknown): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  listOf(reads).forEach((read, index) => {
    if (typeof read === "string" && module !== undefined && read.startsWith(`${module}/`)) {
      out.push(
        problem(
          "read-not-own",
          ["reads", index],
          { value: read },
          `${quote(read)} is a state of this module itself`,
          "leave it out of reads: a module reads and writes its own states without declaring it",
        ),
      );
    }
  });
  return out;
}

function secretPathProblems(secrets: Record<string, unknown>): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const byPath = new Map<string, string>();
  for (const name of Object.keys(secrets).sort()) {
    const path = record(secrets[name])?.path;
    if (typeof path !== "string") continue;
    const other = byPath.get(path);
    if (other !== undefined) {
      out.push(
        problem(
          "secret-path-unique",
          ["own-secrets", name, "path"],
          { value: path },
          `the secrets ${quote(other)} and ${quote(name)} are both written to ${quote(path)}`,
          "give each secret a file of its own",
        ),
      );
    } else byPath.set(path, name);
  }
  return out;
}
