/**
 * Host builds for tests (decision 0200): the `mesh-host` part built as the builder builds any
 * module (delivery's `buildSource` of `packages/delivery/parts/mesh-host`), and variants of it — the
 * same bundle with another version string (a visible change), or one that breaks right after it
 * takes a node over (a deliberately broken build). Each is a real archive with its digest, and a
 * resolved manifest whose bundle names that digest.
 */
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { sha256 } from "@mesh/bus";
import { canonicalJson } from "@mesh/core";
import { buildSource, packArchive, unpackArchive } from "@mesh/delivery";
import { HOST_FEATURES, MESH_VERSION, type Manifest } from "@mesh/protocol";

/** The `mesh-host` part's folder in this checkout. */
export const HOST_PART = fileURLToPath(
  new URL("../../../delivery/parts/mesh-host", import.meta.url),
);

export interface HostBuild {
  readonly bytes: Uint8Array;
  readonly digest: string;
  /** The file Node runs, inside the bundle. */
  readonly entry: string;
  readonly manifest: Manifest;
  readonly manifestDigest: string;
}

let built: Promise<HostBuild> | undefined;

/** The host build of this checkout, built once per test process. */
export function builtHost(): Promise<HostBuild> {
  built ??= (async () => {
    const build = await buildSource(HOST_PART);
    if (!build.ok) throw new Error(`mesh-host did not build: ${build.error}\n${build.log}`);
    const [archive] = build.archives;
    if (archive === undefined) throw new Error("mesh-host built no bundle");
    return {
      bytes: archive.bytes,
      digest: archive.digest,
      entry: "src/main.js",
      manifest: build.manifest,
      manifestDigest: build.manifestDigest,
    };
  })();
  return built;
}

/** What a variant changes. */
export interface HostChange {
  /** The mesh version the build says (its presence, its standby-ready). */
  readonly version?: string;
  /**
   * It boots, takes the node over (adopts its processes, connects, applies, says its presence),
   * and exits with 70 at the moment it would say it is healthy.
   */
  readonly breakAfterTakeOver?: boolean;
  /**
   * A host older than its compositions (decision 0202): its feature table lacks `host-build`, so
   * it refuses every composition that names a host build, all but that host build itself.
   */
  readonly withoutHostBuild?: boolean;
}

/** `base` with `change` made to its bundle's code, repacked reproducibly. */
export async function hostVariant(base: HostBuild, change: HostChange): Promise<HostBuild> {
  const bytes = await changedBundle(base.bytes, base.entry, change);
  const digest = sha256(bytes);
  const manifest: Manifest = {
    ...base.manifest,
    bundles: base.manifest.bundles.map((b) => ({ ...b, digest, size: bytes.length })),
  };
  return {
    bytes,
    digest,
    entry: base.entry,
    manifest,
    manifestDigest: sha256(Buffer.from(canonicalJson(manifest), "utf8")),
  };
}

/** A host bundle's archive with `change` made to the code of its `entry`, repacked reproducibly. */
export async function changedBundle(
  archive: Uint8Array,
  entryPath: string,
  change: HostChange,
): Promise<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), "mesh-host-variant-"));
  try {
    await unpackArchive(archive, join(dir, "b"));
    const files = await filesUnder(join(dir, "b"));
    const entry = files.find((f) => f.path === entryPath);
    if (entry === undefined) throw new Error(`the host build has no ${entryPath}`);
    let code = Buffer.from(entry.bytes).toString("utf8");
    if (change.version !== undefined) {
      const said = `MESH_VERSION = ${JSON.stringify(MESH_VERSION)}`;
      if (code.split(said).length !== 2) throw new Error(`${said} is not in the bundle once`);
      code = code.replace(said, `MESH_VERSION = ${JSON.stringify(change.version)}`);
    }
    if (change.withoutHostBuild === true) {
      const feature = `"host-build": ${JSON.stringify(HOST_FEATURES["host-build"])}`;
      if (code.split(feature).length !== 2) throw new Error(`${feature} is not in the bundle once`);
      code = code.replace(feature, "");
    }
    if (change.breakAfterTakeOver === true) {
      code =
        "{ const send = process.send?.bind(process);\n" +
        '  if (send !== undefined) process.send = (m, ...rest) => (m?.t === "healthy" ? process.exit(70) : send(m, ...rest)); }\n' +
        code;
    }
    return packArchive(
      files.map((f) => (f === entry ? { path: f.path, bytes: Buffer.from(code, "utf8") } : f)),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function filesUnder(dir: string): Promise<Array<{ path: string; bytes: Uint8Array }>> {
  const out: Array<{ path: string; bytes: Uint8Array }> = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    out.push({ path: relative(dir, full), bytes: await readFile(full) });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}
