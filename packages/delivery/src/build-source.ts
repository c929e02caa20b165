/**
 * One build of a module's source folder, on disk only and in this process: read and check the
 * manifest, take each prebuilt bundle from its source after checking its digest, build the
 * bundles of each language with the builder its build module runs (`build-modules/`), and pack
 * every bundle as a reproducible archive. The builder daemon does the same over the bus, asking
 * each language's build module (decision 0160); this is what tests and previews build with.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { canonicalJson } from "@mesh/core";
import { ErrorCode, MeshError, type Manifest } from "@mesh/protocol";
import { sha256 } from "@mesh/bus";
import { copySource } from "./source.js";
import { SHIPPED_LANGUAGES, shippedBuilder } from "./build-modules/builders.js";
import type { BuiltFiles } from "./build-modules/language-builder.js";
import { LOG_TAIL_CHARS, prebuiltFiles, readManifest, tail } from "./source-manifest.js";
import {
  PREBUILT,
  bundlesByLanguage,
  packBundles,
  resolveManifest,
  unknownLanguageError,
  type BuiltArchive,
} from "./build-plan.js";

export type { BuiltArchive };
export { LOG_TAIL_CHARS, prebuiltFiles, readManifest };

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

/** Thrown by verbs that wait for a build which failed. */
export function buildFailed(module: string, build: string, error: string): MeshError {
  return new MeshError(
    ErrorCode.BUILD_FAILED,
    `the build ${build} of ${module} failed: ${error}; see its log with \`mesh builds ${module}\``,
    { module },
  );
}
