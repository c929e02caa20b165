/**
 * Delivery's parts as modules (issue 24, decision 0122): each part's manifest, in
 * `packages/delivery/parts/<part>/mesh.yaml`, and the grant of the principal that runs it, derived
 * from those manifests (core's `partGrant`) rather than written in code.
 */
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { partGrant } from "@mesh/core";
import {
  ErrorCode,
  MeshError,
  MeshPart,
  Principal,
  type Manifest,
  type Permissions,
} from "@mesh/protocol";
import { readManifest } from "./build-source.js";

/** Where the parts' folders are in this checkout (the packed CLI passes its own). */
export const PARTS_DIR = fileURLToPath(new URL("../parts", import.meta.url));

/** The parts each of `mesh up`'s delivery principals runs (the indexer and builder share one). */
export const PRINCIPAL_PARTS = {
  [Principal.assigner]: [MeshPart.assigner],
  [Principal.delivery]: [MeshPart.indexer, MeshPart.builder],
} as const satisfies Partial<Record<Principal, readonly MeshPart[]>>;

/** Reads a part's manifest and checks it; INTERNAL when it is missing or refused (it ships with the mesh). */
export async function readPartManifest(part: MeshPart, dir = PARTS_DIR): Promise<Manifest> {
  const read = await readManifest(join(dir, part));
  if (!read.ok) {
    throw new MeshError(
      ErrorCode.INTERNAL,
      `the manifest of the mesh's part ${part} cannot be used: ${read.error}; reinstall the mesh`,
    );
  }
  if (read.manifest.module !== part) {
    throw new MeshError(
      ErrorCode.INTERNAL,
      `the manifest in ${join(dir, part)} names the module ${read.manifest.module}, not ${part}; reinstall the mesh`,
    );
  }
  return read.manifest;
}

/** The grant of one of `mesh up`'s delivery principals on `node`: its parts' manifests. */
export async function partsPrincipalGrant(
  principal: keyof typeof PRINCIPAL_PARTS,
  options: { readonly node: string; readonly dir?: string },
): Promise<Permissions> {
  const parts = await Promise.all(
    PRINCIPAL_PARTS[principal].map((part) => readPartManifest(part, options.dir)),
  );
  return partGrant({ node: options.node, principal, parts });
}
