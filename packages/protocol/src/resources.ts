/**
 * The resources a node is composed of (`mesh-composed.<node>`): what the host makes the machine
 * match, one resource at a time.
 */
import { z } from "zod";
import { Digest } from "./manifest.js";

/** A bundle archive to fetch, verify and unpack at `path`. */
export const ArchiveResource = z
  .object({
    id: z.string().min(1),
    type: z.literal("archive"),
    /** Where the host fetches it: `mesh-artifacts/<digest>` through the artifact store. */
    source: z.string().min(1),
    digest: Digest,
    path: z.string().min(1),
  })
  .strict();
export type ArchiveResource = z.infer<typeof ArchiveResource>;

/** A file a module declares (its credential, a secret), sealed to the node's public key. */
export const NeedResource = z
  .object({
    id: z.string().min(1),
    type: z.literal("need"),
    kind: z.enum(["credential", "secret"]),
    module: z.string().min(1),
    name: z.string().min(1),
    path: z.string().min(1),
    /** The sealed content; absent until the controller has something to seal. */
    sealed: z.string().optional(),
    user: z.string().optional(),
  })
  .strict();
export type NeedResource = z.infer<typeof NeedResource>;

/** A process to run from a bundle, supervised by the host. */
export const ProcessResource = z
  .object({
    id: z.string().min(1),
    type: z.literal("process"),
    name: z.string().min(1),
    module: z.string().min(1),
    source: z.string().min(1),
    digest: Digest,
    run: z.array(z.string().min(1)).min(1),
    env: z.record(z.string(), z.string()),
    user: z.string().optional(),
    "restart-on": z.array(z.string()),
  })
  .strict();
export type ProcessResource = z.infer<typeof ProcessResource>;

export const Resource = z.discriminatedUnion("type", [ArchiveResource, NeedResource, ProcessResource]);
export type Resource = z.infer<typeof Resource>;
export type ResourceType = Resource["type"];
