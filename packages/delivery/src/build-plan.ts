/**
 * What the builder and `buildSource` share about one build: which bundles go to which language's
 * build module, the refusal of a language no build module builds, and how the archives that come
 * back make the resolved manifest.
 */
import type { Manifest, ManifestBundle } from "@mesh/protocol";
import { buildModuleName } from "@mesh/protocol";
import { sha256 } from "@mesh/bus";
import type { BuiltFiles } from "./build-modules/language-builder.js";
import { packArchive } from "./pack.js";
import { SHIPPED_LANGUAGES } from "./build-modules/languages.js";

/**
 * The languages a mesh builds: those whose build module said it started, and those the mesh
 * ships a build module for (it may be starting: a build of one waits for it rather than fails).
 */
/** One bundle as built: its archive and digest. */
export interface BuiltArchive {
  readonly bundle: string;
  readonly bytes: Uint8Array;
  readonly digest: string;
  readonly size: number;
  /** How a process of the bundle runs when its manifest gives none (said by its build module). */
  readonly run?: readonly string[];
}

export function knownLanguages(registered: readonly string[]): string[] {
  return [...new Set([...registered, ...SHIPPED_LANGUAGES])].sort();
}

/** A bundle taken as it is: the builder repacks it itself, no build module is asked. */
export const PREBUILT = "prebuilt";

/** The bundles of each language a build module builds, languages in the manifest's order. */
export function bundlesByLanguage(manifest: Manifest): Map<string, ManifestBundle[]> {
  const out = new Map<string, ManifestBundle[]>();
  for (const bundle of manifest.bundles) {
    if (bundle.language === PREBUILT) continue;
    const list = out.get(bundle.language) ?? [];
    list.push(bundle);
    out.set(bundle.language, list);
  }
  return out;
}

/**
 * Why the manifest cannot be built here: a bundle in a language no build module of this mesh
 * builds (the seed's refusal of a language with no interpreter, naming what the mesh has).
 */
export function unknownLanguageError(
  manifest: Manifest,
  known: readonly string[],
): string | undefined {
  const bad = manifest.bundles.filter(
    (b) => b.language !== PREBUILT && !known.includes(b.language),
  );
  if (bad.length === 0) return undefined;
  const has =
    known.length === 0
      ? "this mesh has no build module running yet (mesh up starts one per language it ships)"
      : `this mesh has build modules for ${[...known].sort().join(", ")}`;
  return bad
    .map(
      (b) =>
        `the bundle ${JSON.stringify(b.name)} is written in ${JSON.stringify(b.language)}, and ${has}: write one of those (or prebuilt, with source and digest), or run a build module for ${b.language} (${buildModuleName(b.language)})`,
    )
    .join("; ");
}

/** Packs every bundle's files in the manifest's order, saying each archive's digest. */
export function packBundles(
  manifest: Manifest,
  built: ReadonlyMap<string, BuiltFiles>,
  say: (line: string) => void,
): BuiltArchive[] {
  return manifest.bundles.map((bundle) => {
    const files = built.get(bundle.name)?.files ?? [];
    const bytes = packArchive(files);
    const digest = sha256(bytes);
    say(
      `bundle ${bundle.name}: ${files.length} file(s), ${bytes.byteLength} bytes, sha256 ${digest}`,
    );
    const run = built.get(bundle.name)?.run;
    return {
      bundle: bundle.name,
      bytes,
      digest,
      size: bytes.byteLength,
      ...(run === undefined ? {} : { run }),
    };
  });
}

/** What the resolved manifest takes from a bundle's archive. */
export interface ArchiveOutcome {
  readonly bundle: string;
  readonly digest: string;
  readonly size: number;
  readonly run?: readonly string[];
}

/**
 * The manifest with each bundle's digest and size, and the `run` a build module gave for a
 * bundle filled into each process of it that gives none (a typescript bundle gives none: the
 * composer runs it with node, and its manifest is the one the builder wrote before build modules).
 */
export function resolveManifest(manifest: Manifest, archives: readonly ArchiveOutcome[]): Manifest {
  const of = new Map(archives.map((a) => [a.bundle, a]));
  const bundles = manifest.bundles.map((bundle) => {
    const archive = of.get(bundle.name);
    return archive === undefined
      ? bundle
      : { ...bundle, digest: archive.digest, size: archive.size };
  });
  const processes = manifest.processes.map((p) => {
    const run = of.get(p.bundle)?.run;
    return p.run !== undefined || run === undefined ? p : { ...p, run: [...run] };
  });
  const changed = processes.some((p, i) => p !== manifest.processes[i]);
  return changed ? { ...manifest, bundles, processes } : { ...manifest, bundles };
}
