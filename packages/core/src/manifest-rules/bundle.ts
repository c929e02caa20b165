/** The rules across a bundle's fields: how it is used, its entrypoints and loads, a prebuilt's archive. */
import { TYPESCRIPT_ENTRY_EXTENSIONS, builtEntrypoint } from "../bundle-run.js";
import { LANGUAGE_PATTERN } from "@mesh/protocol";
import { problem, quote, type ManifestProblem } from "../manifest-problem.js";
import { closest } from "../suggest.js";
import { listDuplicates, type Bundle } from "./shared.js";

/** What a bundle's rules need to know of the rest of the manifest. */
export interface BundleAbout {
  /** The module's bundles are run by the mesh itself (the runtime's, the host build): no loads or process. */
  readonly runByTheMesh: boolean;
  /** Whether a process runs this bundle. */
  readonly run: boolean;
}

/** A bundle as its rules name and place it. */
interface Seen {
  readonly b: Bundle;
  readonly at: readonly (string | number)[];
  readonly label: string;
}

export function bundleProblems(b: Bundle, about: BundleAbout): ManifestProblem[] {
  const at = ["bundles", b.index];
  const seen: Seen = {
    b,
    at,
    label: b.name === undefined ? `bundles[${b.index}]` : `the bundle ${quote(b.name)}`,
  };
  const out = [
    ...listDuplicates([...at, "entrypoints"], b.entrypoints),
    ...listDuplicates([...at, "loads"], b.loads),
  ];
  if (b.loads !== undefined && b.loads.length === 0) {
    out.push(
      problem(
        "loads-not-empty",
        [...at, "loads"],
        { value: [] },
        `${seen.label} has an empty loads list`,
        "name the files the tool runtime loads, or leave loads out if the bundle is run by a process",
      ),
    );
  }
  if (!about.runByTheMesh && b.name !== undefined)
    out.push(...useProblems(seen, b.name, about.run));

  // When entrypoints or loads is not a list, the schema says so, and nothing more can be said.
  const listsReadable =
    (b.raw.entrypoints === undefined || b.entrypoints !== undefined) &&
    (b.raw.loads === undefined || b.loads !== undefined);
  if (b.language === "typescript" && listsReadable)
    out.push(...entrypointProblems(seen), ...loadProblems(seen));
  if (b.language === "prebuilt") out.push(...prebuiltProblems(seen));
  if (
    typeof b.language === "string" &&
    LANGUAGE_PATTERN.test(b.language) &&
    b.language !== "typescript" &&
    b.language !== "prebuilt" &&
    (b.loads?.length ?? 0) > 0
  ) {
    out.push(
      problem(
        "loads-typescript",
        [...at, "loads"],
        { value: b.loads },
        `${seen.label} is ${quote(b.language)} and lists loads, but the tool runtime loads JavaScript only`,
        `leave loads out: a ${b.language} module serves its tools from its own process (see docs/modules.md, "${b.language === "go" ? "Go" : b.language === "python" ? "Python" : "Other languages"}")`,
      ),
    );
  }
  return out;
}

/** A bundle is delivered one way: loaded by the tool runtime or run by a process, not both. */
function useProblems({ b, at, label }: Seen, name: string, run: boolean): ManifestProblem[] {
  const loads = b.loads ?? [];
  if (loads.length === 0 && !run && (b.loads === undefined || b.loads.length > 0)) {
    return [
      problem(
        "bundle-used",
        [...at, "name"],
        { value: name },
        `${label} has no loads and no process runs it, so it would never be delivered`,
        `add "loads" with the files the tool runtime should load, or a process with "bundle: ${name}"`,
      ),
    ];
  }
  if (loads.length > 0 && run) {
    return [
      problem(
        "bundle-loaded-or-run",
        [...at, "loads"],
        { value: b.loads },
        `${label} has loads and is also run by a process; it would be delivered twice, to one folder`,
        "split it in two bundles: one with the tools (loads), one that the process runs",
      ),
    ];
  }
  return [];
}

/** A typescript bundle's entrypoints: at least one, each with an ending the builder knows, no clash. */
function entrypointProblems({ b, at, label }: Seen): ManifestProblem[] {
  const out: ManifestProblem[] = [];
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
  return out;
}

/** A typescript bundle loads only what it builds: each load is one of its entrypoints. */
function loadProblems({ b, at, label }: Seen): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const entries = b.entrypoints ?? [];
  (b.loads ?? []).forEach((load, i) => {
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
  return out;
}

/** What a prebuilt bundle must say: where its archive is, and the digest to check it against. */
const PREBUILT_FIELDS = [
  {
    field: "source",
    code: "prebuilt-source",
    lacks: "says nowhere where its archive comes from",
    fix: 'add "source" with the archive\'s path inside the module\'s folder, e.g. "dist/app.tar.gz"',
  },
  {
    field: "digest",
    code: "prebuilt-digest",
    lacks: "gives no digest to check its archive against",
    fix: 'add "digest" with the archive\'s SHA-256 (64 lowercase hex characters, what `sha256sum` prints)',
  },
] as const;

function prebuiltProblems({ b, at, label }: Seen): ManifestProblem[] {
  return PREBUILT_FIELDS.filter(({ field }) => b.raw[field] === undefined).map(
    ({ field, code, lacks, fix }) =>
      problem(code, [...at, field], { missing: true }, `${label} is prebuilt and ${lacks}`, fix),
  );
}
