/**
 * The resources a node is composed of (`mesh-composed.<node>`): what the host makes the machine
 * match, one resource at a time.
 */
import { z } from "zod";
import { DIGEST_PATTERN } from "./keys.js";
import { Digest } from "./manifest.js";

/**
 * Where the host fetches a bundle: `<store>/<digest>`, the object of that digest in the artifact
 * store (e.g. `mesh-artifacts/<sha256>`). Every source the mesh composes is routed this way, so a
 * host fetches from the bus only and checks the digest it was told.
 */
export const artifactSource = (store: string, digest: string): string => `${store}/${digest}`;

/** The store and digest of an artifact source, or undefined when it is not one. */
export function parseArtifactSource(source: string): { store: string; digest: string } | undefined {
  const slash = source.lastIndexOf("/");
  const store = source.slice(0, slash);
  const digest = source.slice(slash + 1);
  return slash > 0 && DIGEST_PATTERN.test(digest) ? { store, digest } : undefined;
}

/** What every resource has: its id, and the module it is of. */
const RESOURCE_FIELDS = { id: z.string().min(1), module: z.string().min(1) };

/** A bundle the host fetches, verifies and unpacks: an archive's, or the one a process runs. */
const BUNDLE_FIELDS = {
  /** Where the host fetches it: `mesh-artifacts/<digest>` through the artifact store. */
  source: z.string().min(1),
  digest: Digest,
  /** Where it is unpacked, `<root>/bundles/<module>/<bundle>`. */
  path: z.string().min(1),
};

/** A bundle archive to fetch, verify and unpack at `path`. */
export const ArchiveResource = z
  .object({ ...RESOURCE_FIELDS, type: z.literal("archive"), ...BUNDLE_FIELDS })
  .strict();
export type ArchiveResource = z.infer<typeof ArchiveResource>;

/** A file a module declares (its credential, a secret), sealed to the node's public key. */
export const NeedResource = z
  .object({
    ...RESOURCE_FIELDS,
    type: z.literal("need"),
    kind: z.enum(["credential", "secret"]),
    name: z.string().min(1),
    path: z.string().min(1),
    /** The sealed content; absent until the controller has something to seal. */
    sealed: z.string().optional(),
    /** Who owns the file (it is written 0600); absent: the host's own account. */
    user: z.string().optional(),
    /**
     * A credential's public key (accounts mode). A renewed credential keeps it: when only
     * `sealed` moved, the file is written again and the process that restarts on it is not
     * restarted — it logs in with the new file when its connection next does (decision 0150).
     */
    holder: z.string().optional(),
  })
  .strict();
export type NeedResource = z.infer<typeof NeedResource>;

/** A process to run from a bundle, supervised by the host. */
export const ProcessResource = z
  .object({
    ...RESOURCE_FIELDS,
    type: z.literal("process"),
    name: z.string().min(1),
    /** The bundle it runs, fetched like an archive; `path` is the process's working folder. */
    ...BUNDLE_FIELDS,
    /** argv; relative paths are relative to `path`. */
    run: z.array(z.string().min(1)).min(1),
    env: z.record(z.string(), z.string()),
    /** The account it runs as; absent: the host's own. */
    user: z.string().optional(),
    /** Resource ids whose change restarts it, or `config`: one of its module's config values moved. */
    "restart-on": z.array(z.string()),
  })
  .strict();
export type ProcessResource = z.infer<typeof ProcessResource>;

/**
 * The host build the node runs (decision 0200): the `mesh-host` module's one bundle, fetched and
 * verified like an archive, unpacked beside the host's other builds, and started with Node from
 * `entry` (a path inside the bundle) by the node's launcher, which hands the node over to it. Its
 * shape never changes incompatibly: a host that cannot apply the rest of a composition (its
 * `requires`) still reads this resource, so an old host can always be upgraded.
 */
export const HostResource = z
  .object({
    id: z.string().min(1),
    type: z.literal("host"),
    module: z.string().min(1),
    /** Where the host fetches it: `mesh-artifacts/<digest>` through the artifact store. */
    source: z.string().min(1),
    digest: Digest,
    /** The file Node runs, relative to the unpacked bundle (no `..`, not absolute). */
    entry: z
      .string()
      .min(1)
      .refine((p) => !p.startsWith("/") && !p.split("/").some((s) => s === ".." || s === ""), {
        message: "a path inside the bundle: relative, no empty or .. part",
      }),
  })
  .strict();
export type HostResource = z.infer<typeof HostResource>;

export const Resource = z.discriminatedUnion("type", [
  ArchiveResource,
  NeedResource,
  ProcessResource,
  HostResource,
]);
export type Resource = z.infer<typeof Resource>;
export type ResourceType = Resource["type"];
