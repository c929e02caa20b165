/** The rules across a process's fields: the bundle it runs, how it runs it, what restarts it. */
import {
  RESTART_ON_CONFIG,
  RESTART_ON_PATTERN,
  bundleResourceId,
  isName,
  needResourceId,
  processResourceId,
} from "@mesh/protocol";
import { problem, quote, type ManifestProblem } from "../manifest-problem.js";
import { closest, oneOf } from "../suggest.js";
import { listDuplicates, listOf, type Bundle } from "./shared.js";

/** What a process's rules need to know of the rest of the manifest. */
export interface ProcessAbout {
  readonly module: string | undefined;
  /** Whether `bundles` is absent or a list, so a bundle not in it is really not declared. */
  readonly bundlesKnown: boolean;
  readonly bundlesByName: ReadonlyMap<string, Bundle>;
  readonly secrets: Record<string, unknown>;
  readonly processNames: ReadonlySet<string>;
  readonly configDeclared: boolean;
}

export function processProblems(
  p: Record<string, unknown>,
  index: number,
  about: ProcessAbout,
): ManifestProblem[] {
  const at = ["processes", index];
  const label = typeof p.name === "string" ? `the process ${quote(p.name)}` : `processes[${index}]`;
  const out = bundleRunProblems(p, at, label, about);
  const restartOn = p["restart-on"];
  out.push(...listDuplicates([...at, "restart-on"], restartOn));
  listOf(restartOn).forEach((entry, i) => {
    const found = typeof entry === "string" ? restartOnProblem(entry, label, about) : undefined;
    if (found !== undefined)
      out.push(problem(found.code, [...at, "restart-on", i], { value: entry }, ...found.says));
  });
  return out;
}

/** The process runs a bundle the manifest declares, and one the mesh can start without a run. */
function bundleRunProblems(
  p: Record<string, unknown>,
  at: readonly (string | number)[],
  label: string,
  about: ProcessAbout,
): ManifestProblem[] {
  const out: ManifestProblem[] = [];
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
  return out;
}

/** What is wrong with one restart-on entry, if anything: the rule, the message and the fix. */
function restartOnProblem(
  entry: string,
  label: string,
  about: ProcessAbout,
):
  { code: "restart-on-config-declared" | "restart-on-exists"; says: [string, string] } | undefined {
  if (entry === RESTART_ON_CONFIG) {
    if (about.configDeclared) return undefined;
    return {
      code: "restart-on-config-declared",
      says: [
        `${label} restarts on config, but the module declares no config key, so that never happens`,
        'declare the keys under "config", or leave "config" out of restart-on',
      ],
    };
  }
  // A malformed entry is the schema's problem; another module's resources cannot be known here.
  if (
    about.module === undefined ||
    !RESTART_ON_PATTERN.test(entry) ||
    !entry.startsWith(`${about.module}.`)
  )
    return undefined;
  const own = ownResourceIds(about.module, about.bundlesByName, about.secrets, about.processNames);
  if (own.size === 0) {
    return {
      code: "restart-on-exists",
      says: [
        `${label} restarts on ${quote(entry)}, and this manifest declares no resource of that name`,
        "leave it out, or declare the secret, tools bundle or process it names",
      ],
    };
  }
  if (own.has(entry)) return undefined;
  const guess = closest(entry, own);
  return {
    code: "restart-on-exists",
    says: [
      `${label} restarts on ${quote(entry)}, which is not a resource this manifest declares`,
      guess !== undefined ? `write ${quote(guess)}` : `write one of ${oneOf([...own].sort())}`,
    ],
  };
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
