/**
 * One build of a module's source folder, on disk only: read and check the manifest, type-check
 * the typescript bundles, bundle each typescript bundle's entrypoints with esbuild, take each prebuilt bundle from its source after
 * checking its digest, and pack every bundle as a reproducible archive. The builder daemon puts
 * what this returns on the bus.
 */
import { existsSync } from "node:fs";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Message } from "esbuild";
import {
  MANIFEST_FILE_NAMES,
  MAX_MANIFEST_TEXT,
  builtEntrypoint,
  canonicalJson,
  formatProblem,
  manifestFormatOf,
  parseManifestText,
} from "@mesh/core";
import { ErrorCode, MeshError, type Manifest, type ManifestBundle } from "@mesh/protocol";
import { sha256 } from "@mesh/bus";
import { packArchive, type ArchiveFile } from "./pack.js";
import { providedByRuntime } from "./provided.js";
import { copySource, fetchArchive, readRegularFile, unpackArchive } from "./source.js";
import { typeCheck } from "./typecheck.js";

export interface BuiltArchive {
  readonly bundle: string;
  readonly bytes: Uint8Array;
  readonly digest: string;
  readonly size: number;
}

export type SourceBuild =
  | {
      readonly ok: true;
      /** The manifest with every bundle's digest and size filled in. */
      readonly manifest: Manifest;
      /** The SHA-256 of the resolved manifest's canonical JSON: its key in mesh-manifests. */
      readonly manifestDigest: string;
      readonly archives: readonly BuiltArchive[];
      readonly log: string;
    }
  | { readonly ok: false; readonly error: string; readonly log: string };

/** The last lines of a build's output kept in its record. */
export const LOG_TAIL_CHARS = 16_000;

/** Reads the manifest at a source folder's root and checks it; every problem on refusal. */
export async function readManifest(
  root: string,
): Promise<{ ok: true; manifest: Manifest; file: string } | { ok: false; error: string }> {
  const names = new Set(await readdir(root).catch(() => [] as string[]));
  const file = MANIFEST_FILE_NAMES.find((n) => names.has(n));
  if (file === undefined) {
    return {
      ok: false,
      error: `no manifest at the root of ${root}: write one of ${MANIFEST_FILE_NAMES.join(", ")} (see docs/manifest.schema.json)`,
    };
  }
  const format = manifestFormatOf(file) ?? "yaml";
  let text: string;
  try {
    // Read as a regular file only (a FIFO named mesh.yaml must not hang the build), and bounded:
    // four bytes a character covers any text the manifest's own limit lets through.
    text = (
      await readRegularFile(join(root, file), {
        maxBytes: 4 * MAX_MANIFEST_TEXT,
        what: "the manifest",
      })
    ).toString("utf8");
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  const checked = parseManifestText(text, format);
  if (!checked.ok) {
    return {
      ok: false,
      error: `${file} has ${checked.problems.length} problem(s):\n${checked.problems.map((p) => `  ${formatProblem(p)}`).join("\n")}`,
    };
  }
  return { ok: true, manifest: checked.manifest, file };
}

/** Builds the module in `root`; never throws for the module's own faults (they make a failed build). */
export async function buildSource(
  root: string,
  options: { signal?: AbortSignal; onProgress?: (line: string) => void } = {},
): Promise<SourceBuild> {
  const log: string[] = [];
  const say = (line: string): void => {
    log.push(line);
    options.onProgress?.(line);
  };
  const fail = (error: string): SourceBuild => {
    say(`error: ${error}`);
    return { ok: false, error: error.split("\n")[0] ?? error, log: tail(log) };
  };
  // Built from a copy at a fixed place beside the output, so the source maps' relative paths are
  // the same wherever the source lives: the same source gives the same bytes.
  const work = await mkdtemp(join(tmpdir(), "mesh-build-"));
  try {
    await copySource(
      root,
      join(work, "source"),
      options.signal === undefined ? {} : { signal: options.signal },
    );
    return await buildCopy(join(work, "source"), join(work, "out"), {
      // The copy leaves node_modules behind; the source's own are found where they are.
      nodePaths: [...nodeModulesAbove(resolve(root)), ...meshNodePaths()],
      log,
      say,
      fail,
      signal: options.signal,
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function buildCopy(
  root: string,
  outRoot: string,
  context: {
    nodePaths: readonly string[];
    log: readonly string[];
    say: (line: string) => void;
    fail: (error: string) => SourceBuild;
    signal: AbortSignal | undefined;
  },
): Promise<SourceBuild> {
  const { log, say, fail, signal, nodePaths } = context;
  const read = await readManifest(root);
  if (!read.ok) return fail(read.error);
  const manifest = read.manifest;
  say(`manifest ${read.file}: ${manifest.module}, ${manifest.bundles.length} bundle(s)`);
  const built: ArchiveFile[][] = [];
  for (const bundle of manifest.bundles) {
    signal?.throwIfAborted();
    let files: ArchiveFile[] | string;
    if (bundle.language === "typescript") {
      files = await bundleTypescript(root, join(outRoot, bundle.name), bundle, say, nodePaths);
    } else {
      files = await prebuiltFiles(root, bundle, say, signal);
    }
    if (typeof files === "string") return fail(files);
    built.push(files);
  }
  // After esbuild, which says a syntax error first and in its own words; before anything is packed.
  const checked = await checkTypes(root, manifest, nodePaths, say);
  if (checked !== undefined) return fail(checked);
  const archives: BuiltArchive[] = [];
  const bundles: ManifestBundle[] = [];
  for (const [index, bundle] of manifest.bundles.entries()) {
    signal?.throwIfAborted();
    const files = built[index] ?? [];
    const bytes = packArchive(files);
    const digest = sha256(bytes);
    say(
      `bundle ${bundle.name}: ${files.length} file(s), ${bytes.byteLength} bytes, sha256 ${digest}`,
    );
    archives.push({ bundle: bundle.name, bytes, digest, size: bytes.byteLength });
    bundles.push({ ...bundle, digest, size: bytes.byteLength });
  }
  const resolved: Manifest = { ...manifest, bundles };
  const manifestDigest = sha256(Buffer.from(canonicalJson(resolved), "utf8"));
  say(`resolved manifest ${manifestDigest}`);
  return { ok: true, manifest: resolved, manifestDigest, archives, log: tail(log) };
}

/**
 * Type-checks the module's typescript bundles (the whole module at once: its tsconfig, or the
 * strict default over every entrypoint); the first error, or undefined when they check.
 */
async function checkTypes(
  root: string,
  manifest: Manifest,
  nodePaths: readonly string[],
  say: (line: string) => void,
): Promise<string | undefined> {
  const typescript = manifest.bundles.filter((b) => b.language === "typescript");
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
  {
    let messages: Message[] = [];
    try {
      // Loaded when a build runs: every other verb of the CLI starts without esbuild.
      const { build: esbuild } = await import("esbuild");
      const result = await esbuild({
        absWorkingDir: root,
        entryPoints: entries,
        // A module's own node_modules come first; the SDK the mesh ships is found after them, so
        // a module that imports @mesh/sdk builds without vendoring it.
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
      files.map(async (path) => ({ path, bytes: await readFile(join(out, path)) })),
    );
  }
}

async function prebuiltFiles(
  root: string,
  bundle: ManifestBundle,
  say: (line: string) => void,
  signal: AbortSignal | undefined,
): Promise<ArchiveFile[] | string> {
  if (bundle.source === undefined || bundle.digest === undefined) {
    return `the prebuilt bundle ${bundle.name} needs a source and a digest`;
  }
  // The archive is a file of the module's own source, nowhere else on the builder's machine: a
  // path outside would let a manifest read (or learn the digest of) any file the builder can.
  const path = resolve(root, bundle.source);
  if (!path.startsWith(`${resolve(root)}${sep}`) || bundle.source.includes("\\")) {
    return `the prebuilt bundle ${bundle.name}'s source ${JSON.stringify(bundle.source)} is not a path inside the module's source; put the archive in the module's folder and name it relative to the manifest, e.g. "dist/${bundle.name}.tar.gz"`;
  }
  let bytes: Uint8Array;
  try {
    bytes = await fetchArchive(path, bundle.digest, signal === undefined ? {} : { signal });
  } catch (error) {
    const message = error instanceof MeshError ? error.message : String(error);
    return message.split(path).join(bundle.source);
  }
  say(`bundle ${bundle.name}: prebuilt ${bundle.source}, digest checked`);
  // Repacked reproducibly, so every archive the mesh stores is of one kind and unpacks the same way.
  const dir = await mkdtemp(join(tmpdir(), "mesh-prebuilt-"));
  try {
    try {
      await unpackArchive(bytes, join(dir, "x"), {
        what: `the prebuilt bundle ${bundle.name}'s archive ${JSON.stringify(bundle.source)}`,
      });
    } catch (error) {
      return error instanceof MeshError ? error.message : String(error);
    }
    const files = await listFiles(join(dir, "x"));
    return Promise.all(
      files.map(async (path) => ({ path, bytes: await readFile(join(dir, "x", path)) })),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join("/"))
    .sort();
}

function formatMessage(kind: string, m: Message): string {
  const where =
    m.location === null ? "" : `${m.location.file}:${m.location.line}:${m.location.column + 1}: `;
  return `${where}${kind}: ${m.text}`;
}

function tail(lines: readonly string[]): string {
  const text = lines.join("\n");
  return text.length <= LOG_TAIL_CHARS ? text : `…${text.slice(-LOG_TAIL_CHARS)}`;
}

/** Thrown by verbs that wait for a build which failed. */
export function buildFailed(module: string, build: string, error: string): MeshError {
  return new MeshError(
    ErrorCode.BUILD_FAILED,
    `the build ${build} of ${module} failed: ${error}; see its log with \`mesh builds ${module}\``,
    { module },
  );
}
