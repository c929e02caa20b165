/**
 * The mesh's own parts as modules (issue 24, decision 0122): their names, and what a part's
 * manifest may name of the mesh itself, as `mesh/<name>` in its `reads` and `writes`. The broker
 * turns each name into rights (core's `meshResourceRights`); this table says what each name is.
 */
import { Bucket, ObjectStore, Stream, Subject } from "./layout.js";

/** The owner word of a mesh resource in a manifest: `mesh/wants`. No module may take it. */
export const MESH_OWNER = "mesh";

/** The mesh's own parts that run as modules, by the daemon each runs. */
export const MeshPart = {
  indexer: "mesh-indexer",
  builder: "mesh-builder",
  assigner: "mesh-assigner",
} as const;
export type MeshPart = (typeof MeshPart)[keyof typeof MeshPart];

/** The modules whose manifests may name the mesh's own buckets. */
export const MESH_PARTS: ReadonlySet<string> = new Set(Object.values(MeshPart));

/** What a `mesh/<name>` names, and which of `reads` and `writes` may name it. */
export type MeshResource =
  | { readonly kind: "bucket"; readonly bucket: Bucket; readonly may: "read-write" }
  | { readonly kind: "objects"; readonly store: ObjectStore; readonly may: "read-write" }
  | { readonly kind: "stream"; readonly stream: Stream; readonly may: "read" }
  | { readonly kind: "asks"; readonly prefix: string; readonly may: "write" };

const MESH_PREFIX = "mesh-";

/**
 * Every mesh resource a part may name, by its name: each bucket of the layout by its name without
 * `mesh-` (`mesh/wants` is `mesh-wants`) but the secrets (sealed with the vault's key, the
 * controller's alone), the object store, the conditions stream, and the build modules' asks
 * (`mesh.build.<language>`, written: the builder asks them).
 */
export const MESH_RESOURCES: ReadonlyMap<string, MeshResource> = new Map<string, MeshResource>([
  ...Object.values(Bucket)
    .filter((bucket) => bucket !== Bucket.secrets)
    .map((bucket): [string, MeshResource] => [
      bucket.slice(MESH_PREFIX.length),
      { kind: "bucket", bucket, may: "read-write" },
    ]),
  ["artifacts", { kind: "objects", store: ObjectStore.artifacts, may: "read-write" }],
  ["conditions", { kind: "stream", stream: Stream.conditions, may: "read" }],
  ["build", { kind: "asks", prefix: Subject.buildPrefix, may: "write" }],
]);

/** How a part's manifest names the build modules' asks it writes (`mesh.build.<language>`). */
export const MESH_BUILD_ASKS = `${MESH_OWNER}/build`;

/** `mesh/wants` for `mesh-wants`: how a manifest names one of the mesh's buckets. */
export const meshRef = (bucket: Bucket | ObjectStore | Stream): string =>
  `${MESH_OWNER}/${bucket.slice(MESH_PREFIX.length)}`;

/**
 * The bucket a `mesh/<name>` of a part's manifest names (`mesh/puts` is `mesh-puts`), or undefined
 * when it names no bucket (the object store, the conditions stream, the build asks, or nothing).
 */
export function meshBucketOf(ref: string): Bucket | undefined {
  if (!ref.startsWith(`${MESH_OWNER}/`)) return undefined;
  const resource = MESH_RESOURCES.get(ref.slice(MESH_OWNER.length + 1));
  return resource?.kind === "bucket" ? resource.bucket : undefined;
}
