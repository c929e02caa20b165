/** The rules of the one module the mesh runs as each node's tool runtime. */
import { BROKER_SECRET, RUNTIME_MODULE } from "@mesh/protocol";
import { RUNNABLE_LANGUAGES, interpreterFor } from "../bundle-run.js";
import { problem, quote, type ManifestProblem } from "../manifest-problem.js";
import { oneOf } from "../suggest.js";
import { listOf, type Bundle } from "./shared.js";

export function runtimeProblems(
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
  if (count === 1 && only !== undefined) out.push(...runtimeBundleProblems(only));
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

/** The runtime's one bundle: one entrypoint, a language the mesh can start, run and not loaded. */
function runtimeBundleProblems(only: Bundle): ManifestProblem[] {
  const out: ManifestProblem[] = [];
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
  return out;
}
