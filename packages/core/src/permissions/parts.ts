/**
 * The grant of the mesh's own parts (decision 0122): what a part may do on the mesh's buckets is
 * what its manifest names as `mesh/<name>` in `reads` and `writes`, turned into rights by the
 * table below; beside that, the principal that runs it says its conditions, reads them back, says
 * what it keeps and has its inbox, as every module does.
 */
import {
  ErrorCode,
  MESH_OWNER,
  MESH_PARTS,
  MESH_RESOURCES,
  MeshError,
  Stream,
  Subject,
  keepsSubject,
  moduleConditionsWildcard,
  type Manifest,
  type MeshResource,
  type Permissions,
} from "@mesh/protocol";
import { streamFilter } from "./principals.js";
import {
  inbox,
  kvRead,
  kvReadWrite,
  merge,
  objRead,
  objWrite,
  publishTo,
  streamRead,
  toPermissions,
  type Rights,
} from "./rights.js";

/** The parts of a part's manifest its grant is derived from. */
export type PartManifest = Pick<Manifest, "module" | "reads"> & Partial<Pick<Manifest, "writes">>;

const PREFIX = `${MESH_OWNER}/`;

/** What reading (or writing) one mesh resource takes on the bus. */
const RIGHTS: {
  readonly [K in MeshResource["kind"]]: (
    resource: Extract<MeshResource, { kind: K }>,
    direction: "read" | "write",
  ) => Rights;
} = {
  // A part writes what it also reads back (its builds, its wants), as a module its own states.
  bucket: (r, direction) => (direction === "read" ? kvRead(r.bucket) : kvReadWrite(r.bucket)),
  objects: (r, direction) => (direction === "read" ? objRead(r.store) : objWrite(r.store)),
  stream: (r) => streamRead(r.stream, streamFilter(r.stream)),
  asks: (r) => publishTo(`${r.prefix}.>`),
};

/** The rights of one `mesh/<name>`, read or written; undefined when the mesh has no such name or use. */
export function meshResourceRights(ref: string, direction: "read" | "write"): Rights | undefined {
  if (!ref.startsWith(PREFIX)) return undefined;
  const resource = MESH_RESOURCES.get(ref.slice(PREFIX.length));
  if (resource === undefined) return undefined;
  if (resource.may !== "read-write" && resource.may !== direction) return undefined;
  const rights = RIGHTS[resource.kind] as (r: MeshResource, d: "read" | "write") => Rights;
  return rights(resource, direction);
}

/**
 * The credential of `principal` on `node`, running the mesh parts `parts`: exactly the mesh
 * resources their manifests name, and the principal's own conditions, keeps and inbox.
 *
 * Throws INTERNAL for a manifest that is not a mesh part's or names what the table has no rights
 * for: the parts' manifests ship with the mesh, and their check (`checkManifest`) refuses both.
 */
export function partGrant(input: {
  readonly node: string;
  readonly principal: string;
  readonly parts: readonly PartManifest[];
}): Permissions {
  const { node, principal } = input;
  const parts: Rights[] = [
    publishTo(moduleConditionsWildcard(principal), keepsSubject(node, principal)),
    // Its own conditions read back at start, so it resolves those said before a restart.
    streamRead(Stream.conditions, `${Subject.conditionsPrefix}.${principal}.>`),
    inbox(node, principal),
  ];
  for (const manifest of input.parts) {
    if (!MESH_PARTS.has(manifest.module)) {
      throw new MeshError(
        ErrorCode.INTERNAL,
        `${manifest.module} is not one of the mesh's parts (${[...MESH_PARTS].join(", ")}), so no part's grant is derived from its manifest`,
      );
    }
    const refs = [
      ...manifest.reads.map((ref) => [ref, "read"] as const),
      ...(manifest.writes ?? []).map((ref) => [ref, "write"] as const),
    ];
    for (const [ref, direction] of refs) {
      const rights = meshResourceRights(ref, direction);
      if (rights === undefined) {
        throw new MeshError(
          ErrorCode.INTERNAL,
          `${manifest.module}'s manifest ${direction}s ${JSON.stringify(ref)}, which is not one of the mesh's resources a part may ${direction}; check it with mesh module check`,
        );
      }
      parts.push(rights);
    }
  }
  return toPermissions(merge(...parts));
}
