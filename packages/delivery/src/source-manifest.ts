/**
 * What a build reads of a module's source before any language's builder runs: the manifest at its
 * root, checked, and each prebuilt bundle's archive (digest checked, unpacked to be repacked).
 * Apart from `build-source.ts`, so the builder daemon, which asks build modules for the rest,
 * does not load the compilers those run (decision 0190: each part's bundle holds its own code).
 */
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import {
  MANIFEST_FILE_NAMES,
  MAX_MANIFEST_TEXT,
  formatProblem,
  manifestFormatOf,
  parseManifestText,
} from "@mesh/core";
import { MeshError, type Manifest, type ManifestBundle } from "@mesh/protocol";
import type { ArchiveFile } from "./pack.js";
import { fetchArchive, readRegularFile, unpackArchive } from "./source.js";
import { listFiles } from "./list-files.js";

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

/** The last LOG_TAIL_CHARS of a build's lines. */
export function tail(lines: readonly string[]): string {
  const text = lines.join("\n");
  return text.length <= LOG_TAIL_CHARS ? text : `…${text.slice(-LOG_TAIL_CHARS)}`;
}
