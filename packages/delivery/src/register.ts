/**
 * Registration: `mesh module add <dir | git-url#ref | archive>`. The source is read at once and
 * its manifest checked, so a bad one is refused with every problem before anything is written;
 * then the registration is written to `mesh-modules.<module>` (an operator's write).
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { KvBucket, type MeshBus } from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MeshError,
  RESERVED_MODULE_NAMES,
  type Manifest,
  type ModuleRegistration,
  type ModuleSource,
} from "@mesh/protocol";
import { readManifest } from "./build-source.js";
import { knownLanguages, unknownLanguageError } from "./build-plan.js";
import { fetchArchive, gitCheckout, gitCommit, localPath, unpackArchive } from "./source.js";

/** What a source argument means: a folder, `<git url or path>#<ref>`, or an archive file. */
export async function parseSourceArgument(spec: string): Promise<ModuleSource> {
  const hash = spec.lastIndexOf("#");
  if (hash > 0) {
    const url = spec.slice(0, hash);
    const ref = spec.slice(hash + 1);
    if (ref === "") throw usage(spec, "a git source names its ref after #, e.g. ./repo#main");
    const path = localPath(url);
    return { kind: "git", url: path !== undefined && !url.startsWith("file://") ? path : url, ref };
  }
  const path = resolve(spec);
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) {
    throw new MeshError(
      ErrorCode.SOURCE_UNAVAILABLE,
      `the source ${JSON.stringify(spec)} does not exist; give a folder with a mesh.yaml, a git repository as <url>#<ref>, or a .tar.gz archive`,
      { path },
    );
  }
  if (info.isDirectory()) return { kind: "directory", path };
  if (/\.(tar\.gz|tgz)$/.test(path)) {
    const bytes = await fetchArchive(path, undefined);
    return { kind: "archive", url: path, digest: createHash("sha256").update(bytes).digest("hex") };
  }
  throw usage(spec, "give a folder, <git url>#<ref>, or a .tar.gz archive");
}

/** Reads the source's manifest now and checks it; MANIFEST_INVALID with every problem when it is bad. */
export async function readSourceManifest(
  source: ModuleSource,
  options: { signal?: AbortSignal } = {},
): Promise<{ manifest: Manifest; revision: string | undefined }> {
  const work = await mkdtemp(join(tmpdir(), "mesh-register-"));
  try {
    let root: string;
    let revision: string | undefined;
    switch (source.kind) {
      case "directory":
        root = source.path;
        break;
      case "git":
        revision = await gitCommit(source.url, source.ref, options);
        root = join(work, "src");
        await gitCheckout(source.url, revision, root, options);
        break;
      case "archive":
        root = join(work, "src");
        await unpackArchive(await fetchArchive(source.url, source.digest, options), root);
        revision = source.digest;
        break;
    }
    const read = await readManifest(root);
    if (!read.ok) throw new MeshError(ErrorCode.MANIFEST_INVALID, read.error);
    return { manifest: read.manifest, revision };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Checks the source and registers the module; returns what was written. */
export async function registerModule(
  bus: MeshBus,
  spec: string,
  options: { by: string; now?: () => Date; signal?: AbortSignal },
): Promise<{ registration: ModuleRegistration; manifest: Manifest }> {
  const source = await parseSourceArgument(spec);
  const { manifest } = await readSourceManifest(
    source,
    options.signal === undefined ? {} : { signal: options.signal },
  );
  if (RESERVED_MODULE_NAMES.has(manifest.module)) {
    throw new MeshError(
      ErrorCode.MANIFEST_INVALID,
      `the module name ${JSON.stringify(manifest.module)} is reserved (a principal of the mesh's own, or "all"); rename the module in its manifest`,
      { module: manifest.module },
    );
  }
  // A language no build module of this mesh builds is refused now, naming those it has
  // (decision 0160); the builder refuses it again should its build module go away meanwhile.
  const languages = await KvBucket.open(bus, Bucket.buildModules)
    .then((b) => b.keys(">", options.signal === undefined ? {} : { signal: options.signal }))
    .catch(() => undefined);
  const unknown =
    languages === undefined ? undefined : unknownLanguageError(manifest, knownLanguages(languages));
  if (unknown !== undefined) {
    throw new MeshError(ErrorCode.MANIFEST_INVALID, unknown, { module: manifest.module });
  }
  const registration: ModuleRegistration = {
    module: manifest.module,
    source,
    by: options.by,
    at: (options.now ?? (() => new Date()))().toISOString(),
  };
  const modules = await KvBucket.open(bus, Bucket.modules);
  await modules.put(
    manifest.module,
    registration,
    options.signal === undefined ? {} : { signal: options.signal },
  );
  return { registration, manifest };
}

function usage(spec: string, what: string): MeshError {
  return new MeshError(
    ErrorCode.USAGE,
    `the source ${JSON.stringify(spec)} is not one mesh module add takes: ${what}`,
  );
}
