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
  BROKER_SECRET,
  Manifest,
  NARROWED_MCP_PREFIX,
  RESERVED_MODULE_NAMES,
  RESTART_ON_CONFIG,
  RESTART_ON_PATTERN,
  RUNTIME_MODULE,
  bundleResourceId,
  isName,
  needResourceId,
  processResourceId,
  type Manifest as ManifestValue,
} from "@mesh/protocol";
import { ErrorCode } from "@mesh/protocol";
import {
  RUNNABLE_LANGUAGES,
  TYPESCRIPT_ENTRY_EXTENSIONS,
  builtEntrypoint,
  interpreterFor,
} from "./bundle-run.js";
import { problem, quote, type ManifestPath, type ManifestProblem } from "./manifest-problem.js";
import { schemaProblems } from "./schema-problems.js";
import { configProblems } from "./config-schema.js";
import { closest, oneOf } from "./suggest.js";

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

interface Bundle {
  readonly index: number;
  readonly name: string | undefined;
  readonly language: unknown;
  readonly entrypoints: readonly unknown[] | undefined;
  readonly loads: readonly unknown[] | undefined;
  readonly raw: Record<string, unknown>;
}

/** A module named as one of the mesh's own principals, `all`, or a narrowed mcp credential. */
function reservedName(module: string): ManifestProblem[] {
  const narrowedMcp = module.startsWith(NARROWED_MCP_PREFIX);
  if (!RESERVED_MODULE_NAMES.has(module) && !narrowedMcp) return [];
  const why =
    module === "all"
      ? `${quote(module)} means every node in assignments and puts, so it cannot name a module`
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

function crossFieldProblems(input: unknown): ManifestProblem[] {
  const m = record(input);
  if (m === undefined) return [];
  const out: ManifestProblem[] = [];
  const module = typeof m.module === "string" ? m.module : undefined;

  if (module !== undefined) out.push(...reservedName(module));

  const bundles = listOf(m.bundles)
    .map((raw, index): Bundle | undefined => {
      const b = record(raw);
      if (b === undefined) return undefined;
      return {
        index,
        name: typeof b.name === "string" ? b.name : undefined,
        language: b.language,
        entrypoints: Array.isArray(b.entrypoints) ? (b.entrypoints as unknown[]) : undefined,
        loads: Array.isArray(b.loads) ? (b.loads as unknown[]) : undefined,
        raw: b,
      };
    })
    .filter((b): b is Bundle => b !== undefined);
  const bundlesByName = new Map<string, Bundle>();
  for (const b of bundles)
    if (b.name !== undefined && !bundlesByName.has(b.name)) bundlesByName.set(b.name, b);
  const secrets = record(m["own-secrets"]) ?? {};
  const processes = listOf(m.processes).map((raw) => record(raw));
  const processNames = new Set(
    processes.map((p) => p?.name).filter((n): n is string => typeof n === "string"),
  );
  const runBundles = new Set(
    processes.map((p) => p?.bundle).filter((n): n is string => typeof n === "string"),
  );
  const isRuntime = module === RUNTIME_MODULE;

  out.push(...uniqueNames("bundles", listOf(m.bundles)));
  out.push(...uniqueNames("processes", listOf(m.processes)));
  out.push(...uniqueNames("states", listOf(m.states)));

  for (const b of bundles)
    out.push(...bundleProblems(b, { isRuntime, run: runBundles.has(b.name ?? "") }));

  processes.forEach((p, index) => {
    if (p === undefined) return;
    out.push(
      ...processProblems(p, index, {
        module,
        bundlesKnown: m.bundles === undefined || Array.isArray(m.bundles),
        bundlesByName,
        secrets,
        processNames,
        configDeclared: Object.keys(record(m.config) ?? {}).length > 0,
      }),
    );
  });

  out.push(...listDuplicates(["reads"], m.reads), ...listDuplicates(["calls"], m.calls));
  listOf(m.reads).forEach((read, index) => {
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

  out.push(...secretPathProblems(secrets), ...configProblems(m.config));
  if (isRuntime) out.push(...runtimeProblems(m, bundles, secrets));
  return out;
}

function bundleProblems(b: Bundle, about: { isRuntime: boolean; run: boolean }): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const at = ["bundles", b.index];
  const label = b.name === undefined ? `bundles[${b.index}]` : `the bundle ${quote(b.name)}`;
  out.push(
    ...listDuplicates([...at, "entrypoints"], b.entrypoints),
    ...listDuplicates([...at, "loads"], b.loads),
  );

  if (b.loads !== undefined && b.loads.length === 0) {
    out.push(
      problem(
        "loads-not-empty",
        [...at, "loads"],
        { value: [] },
        `${label} has an empty loads list`,
        "name the files the tool runtime loads, or leave loads out if the bundle is run by a process",
      ),
    );
  }
  const loads = b.loads ?? [];
  if (!about.isRuntime && b.name !== undefined) {
    if (loads.length === 0 && !about.run && (b.loads === undefined || b.loads.length > 0)) {
      out.push(
        problem(
          "bundle-used",
          [...at, "name"],
          { value: b.name },
          `${label} has no loads and no process runs it, so it would never be delivered`,
          `add "loads" with the files the tool runtime should load, or a process with "bundle: ${b.name}"`,
        ),
      );
    }
    if (loads.length > 0 && about.run) {
      out.push(
        problem(
          "bundle-loaded-or-run",
          [...at, "loads"],
          { value: b.loads },
          `${label} has loads and is also run by a process; it would be delivered twice, to one folder`,
          "split it in two bundles: one with the tools (loads), one that the process runs",
        ),
      );
    }
  }

  // When entrypoints or loads is not a list, the schema says so, and nothing more can be said.
  const listsReadable =
    (b.raw.entrypoints === undefined || b.entrypoints !== undefined) &&
    (b.raw.loads === undefined || b.loads !== undefined);
  if (b.language === "typescript" && listsReadable) {
    const entries = b.entrypoints ?? [];
    if (entries.length === 0) {
      out.push(
        problem(
          "entrypoint-needed",
          [...at, "entrypoints"],
          b.entrypoints === undefined ? { missing: true } : { value: [] },
          `${label} is typescript and has no entrypoint, so the builder has nothing to build`,
          'add "entrypoints" with the file(s) to build, e.g. ["src/main.ts"]',
        ),
      );
    }
    const built = new Map<string, string>();
    entries.forEach((entry, i) => {
      if (typeof entry !== "string") return;
      if (!TYPESCRIPT_ENTRY_EXTENSIONS.some((e) => entry.endsWith(e) && entry.length > e.length)) {
        out.push(
          problem(
            "entrypoint-extension",
            [...at, "entrypoints", i],
            { value: entry },
            `the entrypoint ${quote(entry)} does not end in a TypeScript or JavaScript ending, so the builder cannot tell what it becomes`,
            `name a file ending in ${TYPESCRIPT_ENTRY_EXTENSIONS.join(", ")}`,
          ),
        );
        return;
      }
      const file = builtEntrypoint("typescript", entry);
      const other = built.get(file);
      if (other !== undefined && other !== entry) {
        out.push(
          problem(
            "entrypoint-built-clash",
            [...at, "entrypoints", i],
            { value: entry },
            `the entrypoints ${quote(other)} and ${quote(entry)} would both be built to ${quote(file)}`,
            "rename one of the two files",
          ),
        );
      }
      built.set(file, entry);
    });
    loads.forEach((load, i) => {
      if (typeof load === "string" && !entries.includes(load)) {
        const guess = closest(
          load,
          entries.filter((e): e is string => typeof e === "string"),
        );
        out.push(
          problem(
            "load-is-entrypoint",
            [...at, "loads", i],
            { value: load },
            `${label} loads ${quote(load)}, which is not one of its entrypoints, so the builder never builds it`,
            guess !== undefined
              ? `write ${quote(guess)}`
              : `add ${quote(load)} to the bundle's entrypoints too`,
          ),
        );
      }
    });
  }

  if (b.language === "prebuilt") {
    if (b.raw.source === undefined) {
      out.push(
        problem(
          "prebuilt-source",
          [...at, "source"],
          { missing: true },
          `${label} is prebuilt and says nowhere where its archive comes from`,
          'add "source" with the archive\'s path inside the module\'s folder, e.g. "dist/app.tar.gz"',
        ),
      );
    }
    if (b.raw.digest === undefined) {
      out.push(
        problem(
          "prebuilt-digest",
          [...at, "digest"],
          { missing: true },
          `${label} is prebuilt and gives no digest to check its archive against`,
          'add "digest" with the archive\'s SHA-256 (64 lowercase hex characters, what `sha256sum` prints)',
        ),
      );
    }
  }
  return out;
}

function processProblems(
  p: Record<string, unknown>,
  index: number,
  about: {
    module: string | undefined;
    bundlesKnown: boolean;
    bundlesByName: ReadonlyMap<string, Bundle>;
    secrets: Record<string, unknown>;
    processNames: ReadonlySet<string>;
    configDeclared: boolean;
  },
): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const at = ["processes", index];
  const label = typeof p.name === "string" ? `the process ${quote(p.name)}` : `processes[${index}]`;
  const bundleName = p.bundle;
  const bundle = typeof bundleName === "string" ? about.bundlesByName.get(bundleName) : undefined;

  if (
    typeof bundleName === "string" &&
    isName("bundle", bundleName) &&
    bundle === undefined &&
    about.bundlesKnown
  ) {
    const names = [...about.bundlesByName.keys()];
    const guess = closest(bundleName, names);
    out.push(
      problem(
        "process-bundle-exists",
        [...at, "bundle"],
        { value: bundleName },
        `${label} runs the bundle ${quote(bundleName)}, which this manifest does not declare`,
        guess !== undefined
          ? `write ${quote(guess)}`
          : names.length > 0
            ? `write one of ${oneOf(names)}, or declare a bundle named ${quote(bundleName)}`
            : `declare a bundle named ${quote(bundleName)} under "bundles"`,
      ),
    );
  }

  // A typescript bundle without entrypoints is told once, on the bundle (entrypoint-needed).
  if (p.run === undefined && bundle !== undefined && bundle.language === "prebuilt") {
    out.push(
      problem(
        "process-run-needed",
        [...at, "run"],
        { missing: true },
        `${label} gives no run, and its bundle ${quote(bundle.name)} is prebuilt, which the mesh knows no interpreter for`,
        'add "run" with the command, relative to the bundle\'s folder, e.g. ["./bin/daemon"]',
      ),
    );
  }

  const restartOn = p["restart-on"];
  out.push(...listDuplicates([...at, "restart-on"], restartOn));
  listOf(restartOn).forEach((entry, i) => {
    if (typeof entry !== "string") return;
    if (entry === RESTART_ON_CONFIG) {
      if (!about.configDeclared) {
        out.push(
          problem(
            "restart-on-config-declared",
            [...at, "restart-on", i],
            { value: entry },
            `${label} restarts on config, but the module declares no config key, so that never happens`,
            'declare the keys under "config", or leave "config" out of restart-on',
          ),
        );
      }
      return;
    }
    // A malformed entry is the schema's problem; another module's resources cannot be known here.
    if (
      about.module === undefined ||
      !RESTART_ON_PATTERN.test(entry) ||
      !entry.startsWith(`${about.module}.`)
    )
      return;
    const own = ownResourceIds(
      about.module,
      about.bundlesByName,
      about.secrets,
      about.processNames,
    );
    if (own.size > 0 && !own.has(entry)) {
      const guess = closest(entry, own);
      out.push(
        problem(
          "restart-on-exists",
          [...at, "restart-on", i],
          { value: entry },
          `${label} restarts on ${quote(entry)}, which is not a resource this manifest declares`,
          guess !== undefined ? `write ${quote(guess)}` : `write one of ${oneOf([...own].sort())}`,
        ),
      );
    } else if (own.size === 0) {
      out.push(
        problem(
          "restart-on-exists",
          [...at, "restart-on", i],
          { value: entry },
          `${label} restarts on ${quote(entry)}, and this manifest declares no resource of that name`,
          "leave it out, or declare the secret, tools bundle or process it names",
        ),
      );
    }
  });
  return out;
}

/** The ids of the resources a manifest can give rise to, for checking its own restart-on entries. */
function ownResourceIds(
  module: string,
  bundles: ReadonlyMap<string, Bundle>,
  secrets: Record<string, unknown>,
  processes: ReadonlySet<string>,
): Set<string> {
  const ids = new Set<string>();
  if (!isName("module", module)) return ids;
  for (const [name, b] of bundles)
    if ((b.loads ?? []).length > 0 && isName("bundle", name))
      ids.add(bundleResourceId(module, name));
  for (const name of Object.keys(secrets))
    if (isName("secret", name)) ids.add(needResourceId(module, name));
  for (const name of processes)
    if (isName("process", name)) ids.add(processResourceId(module, name));
  return ids;
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

/** The rules of the one module the mesh runs as each node's tool runtime. */
function runtimeProblems(
  m: Record<string, unknown>,
  bundles: readonly Bundle[],
  secrets: Record<string, unknown>,
): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const count = Array.isArray(m.bundles) ? m.bundles.length : 0;
  if (count !== 1) {
    out.push(
      problem(
        "runtime-one-bundle",
        ["bundles"],
        m.bundles === undefined ? { missing: true } : { value: m.bundles },
        `${RUNTIME_MODULE} declares ${count} bundle(s); the runtime is one bundle the mesh runs on each node`,
        count === 0
          ? 'declare one bundle: {name: runtime, language: typescript, entrypoints: ["src/main.ts"]}'
          : "keep exactly one bundle; move anything else to a module of its own",
      ),
    );
  }
  const [only] = bundles;
  if (count === 1 && only !== undefined) {
    const entries = only.entrypoints ?? [];
    if (entries.length !== 1) {
      out.push(
        problem(
          "runtime-one-entrypoint",
          ["bundles", 0, "entrypoints"],
          only.entrypoints === undefined ? { missing: true } : { value: only.entrypoints },
          `${RUNTIME_MODULE}'s bundle has ${entries.length} entrypoint(s); the runtime is started from exactly one`,
          'give exactly one entrypoint, e.g. ["src/main.ts"]',
        ),
      );
    }
    // An unknown language is the schema's problem already; this is about a known one the mesh
    // cannot start (prebuilt has no interpreter).
    if (
      typeof only.language === "string" &&
      (only.language === "typescript" || only.language === "prebuilt") &&
      interpreterFor(only.language) === undefined
    ) {
      out.push(
        problem(
          "runtime-language",
          ["bundles", 0, "language"],
          { value: only.language },
          `${RUNTIME_MODULE}'s bundle is ${quote(only.language)}, and the mesh knows no interpreter to start it with`,
          `write a language the mesh can run: ${oneOf(RUNNABLE_LANGUAGES)}`,
        ),
      );
    }
    if (only.loads !== undefined) {
      out.push(
        problem(
          "runtime-no-loads",
          ["bundles", 0, "loads"],
          { value: only.loads },
          `${RUNTIME_MODULE}'s bundle declares loads, but the runtime's bundle is run, not loaded`,
          "leave loads out; tools belong in the bundles of other modules",
        ),
      );
    }
  }
  if (!Object.hasOwn(secrets, BROKER_SECRET)) {
    out.push(
      problem(
        "runtime-broker-secret",
        ["own-secrets", BROKER_SECRET],
        { missing: true },
        `${RUNTIME_MODULE} declares no own-secret named ${quote(BROKER_SECRET)}, where the node's runtime credential is delivered`,
        `add: own-secrets: {${BROKER_SECRET}: {path: broker.json}}`,
      ),
    );
  }
  if (listOf(m.processes).length > 0) {
    out.push(
      problem(
        "runtime-no-processes",
        ["processes"],
        { value: m.processes },
        `${RUNTIME_MODULE} declares processes; the mesh composes the runtime's one process itself`,
        "leave processes out; a daemon belongs in a module of its own",
      ),
    );
  }
  if (m.filter !== undefined) {
    out.push(
      problem(
        "runtime-no-filter",
        ["filter"],
        { value: m.filter },
        `${RUNTIME_MODULE} has a filter, which would leave the runtime out of adopted machines`,
        "leave filter out; filter the modules that change the machine instead",
      ),
    );
  }
  return out;
}

/** Names used more than once in a list of named entries: every later use is a problem. */
function uniqueNames(
  field: "bundles" | "processes" | "states",
  list: readonly unknown[],
): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const first = new Map<string, number>();
  list.forEach((raw, index) => {
    const name = record(raw)?.name;
    if (typeof name !== "string") return;
    const earlier = first.get(name);
    if (earlier === undefined) {
      first.set(name, index);
      return;
    }
    const kind = field === "bundles" ? "bundle" : field === "processes" ? "process" : "state";
    out.push(
      problem(
        "name-unique",
        [field, index, "name"],
        { value: name },
        `${quote(name)} is also the name of ${field}[${earlier}]`,
        `give this ${kind} a name of its own, e.g. ${quote(`${name}-2`)}, or merge the two`,
      ),
    );
  });
  return out;
}

/** Entries a list names twice: every later one is a problem. */
function listDuplicates(at: ManifestPath, list: unknown): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const seen = new Set<string>();
  listOf(list).forEach((entry, index) => {
    if (typeof entry !== "string") return;
    if (seen.has(entry)) {
      out.push(
        problem(
          "no-duplicates",
          [...at, index],
          { value: entry },
          `${quote(entry)} is listed twice`,
          "list it once",
        ),
      );
    }
    seen.add(entry);
  });
  return out;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function listOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}
