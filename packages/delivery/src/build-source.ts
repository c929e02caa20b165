/**
 * One build of a module's source folder, on disk only and in this process: read and check the
 * manifest, take each prebuilt bundle from its source after checking its digest, build the
 * bundles of each language with the builder its build module runs (`build-modules/`), and pack
 * every bundle as a reproducible archive. The builder daemon does the same over the bus, asking
 * each language's build module (decision 0160); this is what tests and previews build with.
 */
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import {
  MANIFEST_FILE_NAMES,
  MAX_MANIFEST_TEXT,
  canonicalJson,
  formatProblem,
  manifestFormatOf,
  parseManifestText,
} from "@mesh/core";
import { ErrorCode, MeshError, type Manifest, type ManifestBundle } from "@mesh/protocol";
import { sha256 } from "@mesh/bus";
import type { ArchiveFile } from "./pack.js";
import { copySource, fetchArchive, readRegularFile, unpackArchive } from "./source.js";
import { SHIPPED_LANGUAGES, shippedBuilder } from "./build-modules/builders.js";
import type { BuiltFiles } from "./build-modules/language-builder.js";
import { listFiles } from "./build-modules/typescript.js";
import {
  PREBUILT,
  bundlesByLanguage,
  packBundles,
  resolveManifest,
  unknownLanguageError,
  type BuiltArchive,
} from "./build-plan.js";

export type { BuiltArchive };

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
      origin: resolve(root),
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
    origin: string;
    log: readonly string[];
    say: (line: string) => void;
    fail: (error: string) => SourceBuild;
    signal: AbortSignal | undefined;
  },
): Promise<SourceBuild> {
  const { log, say, fail, signal } = context;
  const read = await readManifest(root);
  if (!read.ok) return fail(read.error);
  const manifest = read.manifest;
  say(`manifest ${read.file}: ${manifest.module}, ${manifest.bundles.length} bundle(s)`);
  const unknown = unknownLanguageError(manifest, SHIPPED_LANGUAGES);
  if (unknown !== undefined) return fail(unknown);
  const built = new Map<string, BuiltFiles>();
  for (const bundle of manifest.bundles.filter((b) => b.language === PREBUILT)) {
    const files = await prebuiltFiles(root, bundle, say, signal);
    if (typeof files === "string") return fail(files);
    built.set(bundle.name, { bundle: bundle.name, files });
  }
  for (const [language, bundles] of bundlesByLanguage(manifest)) {
    signal?.throwIfAborted();
    const builder = shippedBuilder(language);
    if (builder === undefined) return fail(`no builder for ${language}`);
    const result = await builder.build({
      root,
      outRoot,
      manifest,
      bundles,
      origin: context.origin,
      say,
      signal,
    });
    if (!result.ok) return fail(result.error);
    for (const b of result.bundles) built.set(b.bundle, b);
  }
  const archives = packBundles(manifest, built, say);
  const resolved = resolveManifest(manifest, archives);
  const manifestDigest = sha256(Buffer.from(canonicalJson(resolved), "utf8"));
  say(`resolved manifest ${manifestDigest}`);
  return { ok: true, manifest: resolved, manifestDigest, archives, log: tail(log) };
}

/** A prebuilt bundle's files: its archive, digest checked, unpacked to be repacked. */
export async function prebuiltFiles(
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
