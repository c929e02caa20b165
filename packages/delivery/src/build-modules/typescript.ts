/**
 * The TypeScript build module's work (`mesh-build-typescript`): each typescript bundle's
 * entrypoints (and what its runtime loads) bundled with esbuild, then the whole module
 * type-checked, so a syntax error is said first in esbuild's words and a type error fails the
 * build before anything is packed. The archives and digests are the ones the builder made before
 * build modules existed (build-modules.test.ts holds them to a recorded digest).
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Message } from "esbuild";
import { builtEntrypoint } from "@mesh/core";
import type { Manifest, ManifestBundle } from "@mesh/protocol";
import type { ArchiveFile } from "../pack.js";
import { providedByRuntime } from "../provided.js";
import { typeCheck } from "../typecheck.js";
import { listFiles } from "../list-files.js";

export { listFiles };
import type {
  BuiltFiles,
  LanguageBuildInput,
  LanguageBuild,
  LanguageBuilder,
} from "./language-builder.js";

export const typescriptBuilder: LanguageBuilder = {
  language: "typescript",
  toolchain: "node (esbuild and the TypeScript compiler ship with the mesh)",
  build: buildTypescript,
};

async function buildTypescript(input: LanguageBuildInput): Promise<LanguageBuild> {
  const { root, outRoot, manifest, say, signal } = input;
  // The module's own node_modules come first (found beside its folder on this machine); the SDK
  // the mesh ships is found after them, so a module that imports @mesh/sdk builds without
  // vendoring it.
  const nodePaths = [
    ...(input.origin === undefined ? [] : nodeModulesAbove(resolve(input.origin))),
    ...meshNodePaths(),
  ];
  const built: BuiltFiles[] = [];
  for (const bundle of input.bundles) {
    signal?.throwIfAborted();
    const files = await bundleTypescript(root, join(outRoot, bundle.name), bundle, say, nodePaths);
    if (typeof files === "string") return { ok: false, error: files };
    built.push({ bundle: bundle.name, files });
  }
  const checked = await checkTypes(root, manifest, input.bundles, nodePaths, say);
  if (checked !== undefined) return { ok: false, error: checked };
  return { ok: true, bundles: built };
}

/**
 * Type-checks the module's typescript bundles (the whole module at once: its tsconfig, or the
 * strict default over every entrypoint); the first error, or undefined when they check.
 */
async function checkTypes(
  root: string,
  manifest: Manifest,
  typescript: readonly ManifestBundle[],
  nodePaths: readonly string[],
  say: (line: string) => void,
): Promise<string | undefined> {
  if (typescript.length === 0) return undefined;
  const entries = typescript.flatMap((b) => [...b.entrypoints, ...(b.loads ?? [])]);
  const started = performance.now();
  const result = await typeCheck({ root, entries, nodePaths, manifest });
  const ms = Math.round(performance.now() - started);
  if (result.ok) {
    say(`type check (${result.config}): ${result.files} file(s), no errors, ${ms} ms`);
    return undefined;
  }
  for (const line of result.messages) say(line);
  return `the type check (${result.config}) found errors: ${result.messages[0] ?? "see the log"}${result.messages.length > 1 ? ` (and ${result.messages.length - 1} more in the log)` : ""}`;
}

/** Every node_modules folder from `dir` up, nearest first, as Node would look for a package. */
function nodeModulesAbove(dir: string): string[] {
  const out: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    const candidate = join(at, "node_modules");
    if (existsSync(candidate)) out.push(candidate);
    if (dirname(at) === at) return out;
  }
}

/** The node_modules folder this mesh's own packages (the SDK among them) are installed in. */
let meshModules: string[] | undefined;
function meshNodePaths(): string[] {
  if (meshModules !== undefined) return meshModules;
  meshModules = [];
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules");
    if (existsSync(join(candidate, "@mesh", "sdk"))) {
      meshModules = [candidate];
      break;
    }
    if (dirname(dir) === dir) break;
  }
  return meshModules;
}

async function bundleTypescript(
  root: string,
  out: string,
  bundle: ManifestBundle,
  say: (line: string) => void,
  nodePaths: readonly string[],
): Promise<ArchiveFile[] | string> {
  // What the runtime loads is built too: a tools bundle's loads name the files it will find.
  const entries = [...new Set([...bundle.entrypoints, ...(bundle.loads ?? [])])].sort();
  if (entries.length === 0)
    return `the typescript bundle ${bundle.name} has no entrypoints: list the files to build in its entrypoints`;
  let messages: Message[] = [];
  try {
    // Loaded when a build runs: every other verb of the CLI starts without esbuild.
    const { build: esbuild } = await import("esbuild");
    const result = await esbuild({
      absWorkingDir: root,
      entryPoints: entries,
      nodePaths: [...nodePaths],
      outdir: out,
      outbase: ".",
      entryNames: "[dir]/[name]",
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      sourcemap: "linked",
      // Bundled CommonJS dependencies call require; an ES module has none of its own.
      banner: {
        js: 'import { createRequire as __meshRequire } from "node:module"; const require = __meshRequire(import.meta.url);',
      },
      logLevel: "silent",
      write: true,
      metafile: false,
      // A tools bundle imports the SDK and zod the runtime provides (provided.ts).
      plugins: (bundle.loads?.length ?? 0) > 0 ? [providedByRuntime(meshNodePaths())] : [],
    });
    messages = result.warnings;
  } catch (error) {
    const failure = error as { errors?: Message[]; warnings?: Message[] };
    for (const m of [...(failure.errors ?? [])]) say(formatMessage("error", m));
    for (const m of [...(failure.warnings ?? [])]) say(formatMessage("warning", m));
    const first = failure.errors?.[0];
    return `esbuild could not build bundle ${bundle.name}: ${first === undefined ? (error as Error).message : formatMessage("error", first)}`;
  }
  for (const m of messages) say(formatMessage("warning", m));
  const files = await listFiles(out);
  for (const entry of entries) {
    const built = builtEntrypoint("typescript", entry);
    if (!files.includes(built))
      return `the entrypoint ${entry} of bundle ${bundle.name} did not build to ${built}; give it a .ts, .mts, .tsx, .js or .mjs ending`;
  }
  return Promise.all(
    files.map(async (path) => ({
      path,
      bytes: withStablePaths(
        path,
        await readFile(join(out, path)),
        root,
        dirname(join(out, path)),
        nodePaths,
      ),
    })),
  );
}

/**
 * esbuild names every file it bundles by its path: from the module's folder in the comments and
 * the keys of bundled CommonJS modules, from the output's folder in the source map. A package found
 * outside the module's folder (in the mesh's own node_modules, or above the module's origin) was
 * so named by where this machine keeps it — `../../home/ci/mesh/node_modules/zod/…` — and the same
 * source built by a mesh installed elsewhere got another digest. Such a package is named as if it
 * were in the module's own node_modules, whichever of those paths it was reached by.
 */
export function withStablePaths(
  file: string,
  bytes: Buffer,
  root: string,
  outDir: string,
  nodePaths: readonly string[],
): Buffer {
  const prefixes = nodePaths
    .flatMap((p) => [relative(root, p), relative(outDir, p)])
    .filter((prefix) => prefix.startsWith(".."))
    .sort((a, b) => b.length - a.length);
  if (prefixes.length === 0 || !/\.(m?js|cjs|map)$/.test(file)) return bytes;
  let text = bytes.toString("utf8");
  for (const prefix of prefixes) text = text.replaceAll(`${prefix}/`, "node_modules/");
  return Buffer.from(text, "utf8");
}

function formatMessage(kind: string, m: Message): string {
  const where =
    m.location === null ? "" : `${m.location.file}:${m.location.line}:${m.location.column + 1}: `;
  return `${where}${kind}: ${m.text}`;
}
