/**
 * Registering the mesh's parts from the archives the CLI's package ships (decision 0190): what the
 * indexer and the builder would write for them, written at once — each bundle's archive into the
 * object store, the resolved manifest, the build record, then its candidate, then the registration
 * with the source archive and its digest. Their digests are known, so no builder is needed to start
 * the builder; once the indexer and the builder run they find the candidate and the build already
 * there and write nothing. A part already registered from the same archive is left as it is, so a
 * second `mesh up` changes nothing; a newer archive (a newer mesh) becomes a new candidate and build,
 * which the assigner wants as it wants any module's newest build.
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ArtifactStore, KvBucket, sha256, type MeshBus } from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MeshError,
  buildKey,
  candidateKey,
  digestKey,
  isMeshError,
  parseCandidateKey,
  type ShippedPart,
} from "@mesh/protocol";
import { buildIdOf } from "./builder.js";

export interface ShippedRegistration {
  readonly module: string;
  readonly build: string;
  readonly manifestDigest: string;
  /** Whether this call wrote it (false: it stood from an earlier run). */
  readonly written: boolean;
}

export interface RegisterShippedOptions {
  /** The shipped parts' folder (the files the index names are in it). */
  readonly dir: string;
  readonly by: string;
  readonly now?: () => Date;
  readonly signal?: AbortSignal;
}

/** Registers one shipped part, with its build; returns the build that stands for its archive. */
export async function registerShippedPart(
  bus: MeshBus,
  part: ShippedPart,
  options: RegisterShippedOptions,
): Promise<ShippedRegistration> {
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  const at = (options.now ?? (() => new Date()))().toISOString();
  const modules = await KvBucket.open(bus, Bucket.modules);
  const candidates = await KvBucket.open(bus, Bucket.candidates);
  const builds = await KvBucket.open(bus, Bucket.builds);
  const { module } = part;
  const digest = part.source.digest;
  let written = false;
  for (;;) {
    const standing = new Map<number, string>();
    for (const key of await candidates.keys(`${module}.*`, signal)) {
      const candidate = await candidates.get(key, signal);
      if (candidate !== undefined)
        standing.set(parseCandidateKey(key).seq, candidate.value.revision);
    }
    const found = [...standing].find(([, revision]) => revision === digest)?.[0];
    const seq = found ?? Math.max(0, ...standing.keys()) + 1;
    const build = buildIdOf({ seq, sourceDigest: digest });
    const key = buildKey(module, build);
    if ((await builds.get(key, signal))?.value.status !== "built") {
      // Stored before the record that names them, and the record before its candidate, so a
      // builder that sees the candidate finds it built and builds nothing.
      await storeBuild(bus, part, { key, build, seq, at }, options);
      written = true;
    }
    if (found === undefined) {
      try {
        await candidates.create(
          candidateKey(module, seq),
          { module, seq, revision: digest, sourceDigest: digest, at },
          signal,
        );
      } catch (error) {
        if (!isMeshError(error, ErrorCode.CONFLICT)) throw error;
        // An indexer numbered that candidate first: the record written for it is no build of it.
        await builds.delete(key, signal);
        continue;
      }
    }
    const url = resolve(options.dir, part.source.file);
    const registered = await modules.get(module, signal);
    const source = registered?.value.source;
    if (source?.kind !== "archive" || source.digest !== digest || source.url !== url) {
      await modules.put(
        module,
        { module, source: { kind: "archive", url, digest }, by: options.by, at },
        signal,
      );
      written = true;
    }
    return { module, build, manifestDigest: part.manifestDigest, written };
  }
}

/** The part's archives (their digests checked), its resolved manifest, and its build record. */
async function storeBuild(
  bus: MeshBus,
  part: ShippedPart,
  record: { key: string; build: string; seq: number; at: string },
  options: RegisterShippedOptions,
): Promise<void> {
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  const artifacts = await ArtifactStore.open(bus, signal);
  for (const bundle of part.bundles) {
    const path = join(options.dir, bundle.file);
    const bytes = await readFile(path);
    if (sha256(bytes) !== bundle.digest) {
      throw new MeshError(
        ErrorCode.DIGEST_MISMATCH,
        `${path} is not the archive of ${part.module}'s bundle ${bundle.name} the mesh was built with (digest ${bundle.digest.slice(0, 12)}…); rebuild the mesh (\`npm run build\`) or reinstall it`,
        { module: part.module, path },
      );
    }
    await artifacts.put(bytes, signal);
  }
  await (
    await KvBucket.open(bus, Bucket.manifests)
  ).put(digestKey(part.manifestDigest), part.manifest, signal);
  await (
    await KvBucket.open(bus, Bucket.builds)
  ).put(
    record.key,
    {
      module: part.module,
      build: record.build,
      status: "built",
      candidate: record.seq,
      manifestDigest: part.manifestDigest,
      bundles: part.bundles.map((b) => ({ name: b.name, digest: b.digest, size: b.size })),
      log: `prebuilt: shipped with the mesh, its archives' digests known (decision 0190); stored by ${options.by}`,
      timings: { started: record.at, finished: record.at, ms: 0 },
    },
    signal,
  );
}
