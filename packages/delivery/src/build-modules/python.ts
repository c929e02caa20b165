/**
 * The Python build module's work (`mesh-build-python`, decision 0161). A python bundle is the
 * module's source files as they are (its `.gitignore` applies; nothing is compiled: `.pyc` files
 * carry times), with beside them in `.mesh/`:
 *
 * - `python/mesh_sdk/` — the SDK (standard library only), put on `PYTHONPATH` by the bridge;
 * - `bridge.mjs` — `@mesh/sdk/bridge` bundled with esbuild, which holds the module's credential,
 *   serves the SDK's socket and the module's tools, and runs `python3 <entry>`.
 *
 * Dependencies are vendored, never fetched: every requirement `requirements.txt` names must be in
 * the module's `vendor/` folder (a package folder, a module file or a pure-Python wheel), which
 * the bridge puts on `PYTHONPATH`. Every `.py` file is compiled once with `python3` (nothing
 * written) so a syntax error fails the build. The same source gives the same archive.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ArchiveFile } from "../pack.js";
import { listSourceFiles } from "../source.js";
import { listFiles } from "../list-files.js";
import { sdkRoot } from "./sdk-root.js";
import type {
  BuiltFiles,
  LanguageBuildInput,
  LanguageBuild,
  LanguageBuilder,
} from "./language-builder.js";
import { notInstalled, runTool } from "./language-builder.js";

/** Where the mesh's files sit in a python bundle. */
export const PYTHON_MESH_DIR = ".mesh";

export const pythonBuilder: LanguageBuilder = {
  language: "python",
  toolchain: "python3 (3.8 or newer) on the build machine and every node that runs the module",
  build: buildPython,
};

async function buildPython(input: LanguageBuildInput): Promise<LanguageBuild> {
  const { root, say, signal } = input;
  const sources = (await listSourceFiles(root, signal === undefined ? {} : { signal })).filter(
    (p) => p !== PYTHON_MESH_DIR && !p.startsWith(`${PYTHON_MESH_DIR}/`),
  );
  for (const bundle of input.bundles) {
    const [entry] = bundle.entrypoints;
    if (entry === undefined || !entry.endsWith(".py"))
      return fail(
        `the python bundle ${bundle.name} needs an entrypoint, a .py file (e.g. main.py)`,
      );
    if (!sources.includes(entry))
      return fail(`the entrypoint ${entry} of bundle ${bundle.name} is not a file of the source`);
  }
  const missing = await unvendored(root, sources);
  if (missing.length > 0) {
    return fail(
      `requirements.txt names ${missing.map((m) => JSON.stringify(m)).join(", ")}, not vendored in vendor/: the build installs nothing from a package index (none is reached from here); put each package's folder or pure-Python wheel in vendor/ (pip download --no-deps -d vendor <name>, on a machine that reaches one)`,
    );
  }
  const compiled = await compileAll(
    root,
    sources.filter((p) => p.endsWith(".py")),
  );
  if (compiled !== undefined) return fail(compiled);
  say(
    `python: ${sources.length} file(s), ${sources.filter((p) => p.endsWith(".py")).length} compiled`,
  );
  const files: ArchiveFile[] = await Promise.all(
    sources.map(async (path) => ({ path, bytes: await readFile(join(root, path)) })),
  );
  const mesh = [
    ...(await sdkFiles()),
    { path: `${PYTHON_MESH_DIR}/bridge.mjs`, bytes: await bridge() },
  ];
  const built: BuiltFiles[] = input.bundles.map((bundle) => ({
    bundle: bundle.name,
    files: [...files, ...mesh],
    run: ["node", `${PYTHON_MESH_DIR}/bridge.mjs`, "python3", bundle.entrypoints[0] ?? "main.py"],
  }));
  return { ok: true, bundles: built };

  function fail(error: string): LanguageBuild {
    say(`error: ${error}`);
    return { ok: false, error };
  }
}

/** The requirements `requirements.txt` names that `vendor/` does not hold. */
async function unvendored(root: string, sources: readonly string[]): Promise<string[]> {
  if (!sources.includes("requirements.txt")) return [];
  const text = await readFile(join(root, "requirements.txt"), "utf8");
  const vendored = new Set(
    sources
      .filter((p) => p.startsWith("vendor/"))
      .map((p) =>
        normal(
          p
            .slice("vendor/".length)
            .split("/")[0]
            ?.replace(/(-[^-]+)*\.whl$|\.py$/, "") ?? "",
        ),
      ),
  );
  const names = text
    .split("\n")
    .map((line) => line.replace(/#.*/, "").trim())
    .filter((line) => line !== "" && !line.startsWith("-"))
    .map((line) => /^[A-Za-z0-9._-]+/.exec(line)?.[0] ?? line);
  return names.filter((name) => !vendored.has(normal(name)));
}

/** A distribution's name as pip compares them: lowercase, `-`, `_` and `.` alike. */
const normal = (name: string): string => name.toLowerCase().replace(/[-_.]+/g, "_");

/** The first syntax error among the files, or undefined when every one compiles. */
async function compileAll(root: string, files: readonly string[]): Promise<string | undefined> {
  if (files.length === 0) return undefined;
  const program =
    "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, 'rb').read(), f, 'exec', dont_inherit=True)\n";
  try {
    await runTool("python3", ["-c", program, ...files], { cwd: root, timeout: 120_000 });
    return undefined;
  } catch (error) {
    const missing = notInstalled(error, "python3", "python3");
    if (missing !== undefined) return missing;
    const failure = error as { stderr?: string };
    const last = (failure.stderr ?? "").trim().split("\n").slice(-4).join(" ").replace(/\s+/g, " ");
    return `python3 could not compile the source: ${last}`;
  }
}

/** The SDK's files, as the bundle holds them. */
async function sdkFiles(): Promise<ArchiveFile[]> {
  const dir = join(sdkRoot(), "python");
  const paths = (await listFiles(dir)).filter((p) => p.endsWith(".py"));
  return Promise.all(
    paths.map(async (p) => ({
      path: `${PYTHON_MESH_DIR}/python/${p}`,
      bytes: await readFile(join(dir, p)),
    })),
  );
}

let bridgeBytes: Promise<Uint8Array> | undefined;
/** The bridge, bundled once per process: the same mesh gives the same bytes. */
function bridge(): Promise<Uint8Array> {
  bridgeBytes ??= (async () => {
    const { build } = await import("esbuild");
    const result = await build({
      absWorkingDir: sdkRoot(),
      entryPoints: [join(sdkRoot(), "dist", "bridge.js")],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      minify: true,
      legalComments: "none",
      banner: {
        js: 'import { createRequire as __meshRequire } from "node:module"; const require = __meshRequire(import.meta.url);',
      },
      write: false,
      logLevel: "silent",
    });
    const [out] = result.outputFiles;
    if (out === undefined) throw new Error("esbuild gave no bridge");
    return out.contents;
  })();
  return bridgeBytes;
}
