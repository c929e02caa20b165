/**
 * A new version of the mesh for `mesh upgrade` tests (decision 0201): this checkout's shipped
 * parts (`npm run build`), copied, with the host build changed — another version string (a
 * visible change), or broken right after it takes a node over — and everything the index says of
 * it made again as `npm run build` makes it: the source archive with the bundle as prebuilt, the
 * build the builder would make of it (delivery's `buildSource`), the resolved manifest and its
 * digest. The other parts are this version's, unchanged.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256 } from "@mesh/bus";
import { canonicalJson } from "@mesh/core";
import { buildSource, packArchive, readShippedParts, unpackArchive } from "@mesh/delivery";
import {
  HOST_MODULE,
  Manifest,
  SHIPPED_PARTS_INDEX,
  type ShippedPart,
  type ShippedParts,
} from "@mesh/protocol";
import { SHIPPED_PARTS } from "../shipped.js";
import { changedBundle, filesUnder, type HostChange } from "./host-builds.js";

export interface NewMesh {
  /** The folder `mesh upgrade` is given (it holds `shipped-parts/`). */
  readonly folder: string;
  readonly version: string;
  /** The new host build's digest. */
  readonly host: string;
}

/** Writes a new mesh of `version` into `folder`, its host build changed by `change`. */
export async function newMesh(
  folder: string,
  version: string,
  change: HostChange = {},
): Promise<NewMesh> {
  const parts = join(folder, "shipped-parts");
  await cp(SHIPPED_PARTS, parts, { recursive: true });
  const index = await readShippedParts(parts);
  const host = index.parts.find((p) => p.module === HOST_MODULE);
  const bundle = host?.bundles[0];
  if (host === undefined || bundle === undefined)
    throw new Error(`${SHIPPED_PARTS} ships no ${HOST_MODULE}: run npm run build`);
  const entry = host.manifest.bundles[0]?.entrypoints[0] ?? "src/main.js";
  const changed = await changedBundle(await readFile(join(parts, bundle.file)), entry, {
    version,
    ...change,
  });
  const made = await rebuilt(host, await readFile(join(parts, host.source.file)), changed);
  await writeFile(join(parts, host.source.file), made.source);
  await writeFile(join(parts, bundle.file), made.stored);
  const next: ShippedParts = {
    ...index,
    version,
    parts: index.parts.map((p) => (p === host ? made.part : p)),
  };
  await writeFile(join(parts, SHIPPED_PARTS_INDEX), `${JSON.stringify(next, null, 2)}\n`);
  return { folder, version, host: made.part.bundles[0]?.digest ?? "" };
}

/** The part's source archive with `bundle` in place of its bundle, and the build made of it. */
async function rebuilt(
  part: ShippedPart,
  source: Uint8Array,
  bundle: Uint8Array,
): Promise<{ source: Uint8Array; stored: Uint8Array; part: ShippedPart }> {
  const work = await mkdtemp(join(tmpdir(), "mesh-new-host-"));
  try {
    await unpackArchive(source, join(work, "src"));
    const manifestFile = join(work, "src", "mesh.json");
    const manifest = Manifest.parse(JSON.parse(await readFile(manifestFile, "utf8")));
    const [first] = manifest.bundles;
    if (first?.source === undefined) throw new Error(`${part.module}'s source is not prebuilt`);
    await writeFile(join(work, "src", first.source), bundle);
    const prebuilt: Manifest = {
      ...manifest,
      bundles: [{ ...first, digest: sha256(bundle) }, ...manifest.bundles.slice(1)],
    };
    await writeFile(manifestFile, `${canonicalJson(prebuilt)}\n`);
    const newSource = packArchive(await filesUnder(join(work, "src")));
    const build = await buildSource(join(work, "src"));
    if (!build.ok) throw new Error(`the new ${part.module} did not build: ${build.error}`);
    const stored = build.archives[0];
    if (stored === undefined) throw new Error(`the new ${part.module} built no bundle`);
    return {
      source: newSource,
      stored: stored.bytes,
      part: {
        ...part,
        source: { ...part.source, digest: sha256(newSource) },
        manifest: build.manifest,
        manifestDigest: build.manifestDigest,
        bundles: [
          {
            ...(part.bundles[0] as ShippedPart["bundles"][number]),
            digest: stored.digest,
            size: stored.size,
          },
        ],
      },
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
