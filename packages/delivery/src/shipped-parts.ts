/**
 * Making the mesh's parts as the CLI's package ships them (decision 0190), when the mesh itself is
 * built (`scripts/parts-bundle.js`): each part's folder (`packages/delivery/parts/<part>`) is built
 * as the builder builds any module, then turned into a source archive whose manifest takes those
 * bundles as prebuilt; that source is built once more, exactly as the builder would build it once
 * registered, and what that build stores (archives, resolved manifest) is kept beside it with the
 * index `mesh up` registers the parts from.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtEntrypoint, canonicalJson } from "@mesh/core";
import {
  ErrorCode,
  SHIPPED_MODULES,
  MESH_VERSION,
  MeshError,
  SHIPPED_PARTS_INDEX,
  ShippedParts,
  type Manifest,
  type ShippedPart,
} from "@mesh/protocol";
import { sha256 } from "@mesh/bus";
import { buildSource, type SourceBuild } from "./build-source.js";
import { PREBUILT } from "./build-plan.js";
import { packArchive } from "./pack.js";
import { readManifest } from "./source-manifest.js";
import { unpackArchive } from "./source.js";

/** Where each bundle's archive sits in a part's prebuilt source. */
const bundleFile = (bundle: string): string => `${bundle}.tar.gz`;

/**
 * Builds every part under `partsDir` and writes the shipped folder `outDir` (its archives and
 * `index.json`); returns the index. Throws INTERNAL naming the part whose build failed.
 */
export async function shipParts(input: {
  readonly partsDir: string;
  readonly outDir: string;
  readonly say?: (line: string) => void;
}): Promise<ShippedParts> {
  const say = input.say ?? (() => undefined);
  await rm(input.outDir, { recursive: true, force: true });
  await mkdir(input.outDir, { recursive: true });
  const parts: ShippedPart[] = [];
  for (const part of SHIPPED_MODULES) {
    parts.push(await shipPart(join(input.partsDir, part), input.outDir, say));
  }
  const index: ShippedParts = { v: 1, version: MESH_VERSION, parts };
  await writeFile(join(input.outDir, SHIPPED_PARTS_INDEX), `${JSON.stringify(index, null, 2)}\n`);
  return ShippedParts.parse(index);
}

async function shipPart(
  folder: string,
  outDir: string,
  say: (line: string) => void,
): Promise<ShippedPart> {
  const read = await readManifest(folder);
  if (!read.ok) throw new MeshError(ErrorCode.INTERNAL, `${folder}: ${read.error}`);
  const module = read.manifest.module;
  const built = succeeded(module, "its folder", await buildSource(folder));
  const source = packArchive([
    {
      path: "mesh.json",
      bytes: Buffer.from(`${canonicalJson(prebuiltManifest(read.manifest, built))}\n`),
    },
    ...built.archives.map((a) => ({ path: bundleFile(a.bundle), bytes: a.bytes })),
  ]);
  // The build the builder makes of that source once it is registered: the bundles repacked.
  const work = await mkdtemp(join(tmpdir(), "mesh-ship-"));
  let stored: Extract<SourceBuild, { ok: true }>;
  try {
    await unpackArchive(source, join(work, "src"));
    stored = succeeded(module, "its prebuilt source", await buildSource(join(work, "src")));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const sourceFile = `${module}.tar.gz`;
  await writeFile(join(outDir, sourceFile), source);
  const bundles = [];
  for (const a of stored.archives) {
    const file = `${module}.${a.bundle}.tar.gz`;
    await writeFile(join(outDir, file), a.bytes);
    bundles.push({ name: a.bundle, digest: a.digest, size: a.size, file });
  }
  const digest = sha256(source);
  say(`${module}: source ${digest.slice(0, 12)}, manifest ${stored.manifestDigest.slice(0, 12)}`);
  return {
    module,
    source: { file: sourceFile, digest },
    manifest: stored.manifest,
    manifestDigest: stored.manifestDigest,
    bundles,
  };
}

/**
 * The part's manifest with each bundle taken as prebuilt from the archive built of it, and each
 * process told how to run its bundle (a prebuilt bundle has no interpreter the mesh knows).
 */
export function prebuiltManifest(
  manifest: Manifest,
  built: Extract<SourceBuild, { ok: true }>,
): Manifest {
  const digestOf = new Map(built.archives.map((a) => [a.bundle, a.digest]));
  const languageOf = new Map(manifest.bundles.map((b) => [b.name, b.language]));
  return {
    ...manifest,
    bundles: manifest.bundles.map((b) => ({
      ...b,
      language: PREBUILT,
      source: bundleFile(b.name),
      digest: digestOf.get(b.name) ?? "",
      entrypoints: b.entrypoints.map((e) => builtEntrypoint(b.language, e)),
      ...(b.loads === undefined
        ? {}
        : { loads: b.loads.map((l) => builtEntrypoint(b.language, l)) }),
    })),
    processes: manifest.processes.map((p) => {
      if (p.run !== undefined) return p;
      const bundle = manifest.bundles.find((b) => b.name === p.bundle);
      const entry = bundle?.entrypoints[0];
      const language = languageOf.get(p.bundle) ?? "";
      return entry === undefined || language !== "typescript"
        ? p
        : { ...p, run: ["node", builtEntrypoint(language, entry)] };
    }),
  };
}

function succeeded(
  module: string,
  what: string,
  build: SourceBuild,
): Extract<SourceBuild, { ok: true }> {
  if (build.ok) return build;
  throw new MeshError(
    ErrorCode.INTERNAL,
    `the mesh's part ${module} did not build from ${what}: ${build.error}\n${build.log}`,
  );
}

/** Reads the shipped folder's index; INTERNAL when it is missing or not one (reinstall the mesh). */
export async function readShippedParts(dir: string): Promise<ShippedParts> {
  let text: string;
  try {
    text = await readFile(join(dir, SHIPPED_PARTS_INDEX), "utf8");
  } catch (error) {
    throw new MeshError(
      ErrorCode.INTERNAL,
      `the mesh's parts are not in ${dir} (${(error as Error).message}); in a checkout run \`npm run build\`, otherwise reinstall the mesh`,
      { cause: error },
    );
  }
  const parsed = ShippedParts.safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INTERNAL,
      `${join(dir, SHIPPED_PARTS_INDEX)} is not the index of the mesh's parts (${parsed.error.message}); rebuild or reinstall the mesh`,
    );
  }
  return parsed.data;
}
