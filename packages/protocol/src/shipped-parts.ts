/**
 * The mesh's own parts as the CLI's package ships them (decision 0190): each part's source archive
 * (its manifest with prebuilt bundles, and those bundles), and the build the builder would make of
 * it, made when the mesh itself is built. `mesh up` registers each part from its archive and writes
 * that build as the builder would, so no builder is needed to start the builder.
 */
import { z } from "zod";
import { HOST_MODULE } from "./host-features.js";
import { Digest, Manifest } from "./manifest.js";
import { MESH_PARTS } from "./mesh-parts.js";
import { NAME_PATTERN } from "./names.js";

/**
 * What the CLI ships prebuilt: delivery's parts, and the host build (`mesh-host`, decision 0200),
 * whose digest is the CLI's own host's, so a host started by this CLI is the build the mesh names.
 */
export const SHIPPED_MODULES: readonly string[] = [...MESH_PARTS, HOST_MODULE].sort();

const FileName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/);

/** One part: what registers it and the build of its one candidate. */
export const ShippedPart = z
  .object({
    module: z.string().regex(NAME_PATTERN),
    /** The source archive, a file beside the index, registered as the module's source. */
    source: z.object({ file: FileName, digest: Digest }).strict(),
    /** The resolved manifest the build of that source has, and its digest (its key in mesh-manifests). */
    manifest: Manifest,
    manifestDigest: Digest,
    /** Each bundle's archive as the build stores it, a file beside the index. */
    bundles: z
      .array(
        z
          .object({
            name: z.string().regex(NAME_PATTERN),
            digest: Digest,
            size: z.number().int().nonnegative(),
            file: FileName,
          })
          .strict(),
      )
      .min(1),
  })
  .strict();
export type ShippedPart = z.infer<typeof ShippedPart>;

/** `index.json` of the shipped parts' folder. */
export const ShippedParts = z
  .object({ v: z.literal(1), version: z.string().min(1), parts: z.array(ShippedPart) })
  .strict();
export type ShippedParts = z.infer<typeof ShippedParts>;

/** The index's file name in the shipped parts' folder. */
export const SHIPPED_PARTS_INDEX = "index.json";
