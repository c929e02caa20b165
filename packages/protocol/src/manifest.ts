/**
 * The shape of a module's manifest (`mesh.yaml` / `mesh.json`). This schema checks fields one by
 * one; the checks across fields (a process names an existing bundle, the runtime's rules, …) are
 * in `@mesh/core`, which reports every problem at once.
 */
import { z } from "zod";
import { BUILD_ID_PATTERN, KEY_NAME_PATTERN, NAME_PATTERN, TOOL_NAME_PATTERN } from "./names.js";
import { DIGEST_PATTERN } from "./layout.js";

const name = (what: string, example: string) =>
  z.string().regex(NAME_PATTERN, {
    error: `a ${what} name is a lowercase letter, then lowercase letters, digits or -, at most 63 characters (e.g. "${example}")`,
  });

export const Digest = z.string().regex(DIGEST_PATTERN, {
  error: "a digest is the lowercase hex SHA-256 of the content: 64 characters of 0-9a-f",
});

export const BuildId = z.string().regex(BUILD_ID_PATTERN, {
  error: "a build id is lowercase letters, digits and -, starting with a letter or digit",
});

/** Languages the mesh knows how to build or take as they are. */
export const Language = z.enum(["typescript", "prebuilt"]);
export type Language = z.infer<typeof Language>;

/** A path inside a bundle: relative, forward slashes, never leaving the bundle. */
export const BundleRelativePath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith("/") && !p.split("/").includes(".."), {
    error: "a path inside a bundle is relative and never uses .. (e.g. \"src/main.ts\")",
  });

export const ManifestBundle = z
  .object({
    name: name("bundle", "tools"),
    language: Language,
    entrypoints: z.array(BundleRelativePath).default([]),
    /** The files the tool runtime loads from this bundle; a bundle with loads is a tools bundle. */
    loads: z.array(BundleRelativePath).optional(),
    /** For `prebuilt`: where the archive comes from, and its digest. */
    source: z.string().min(1).optional(),
    digest: Digest.optional(),
    size: z.number().int().nonnegative().optional(),
  })
  .strict();
export type ManifestBundle = z.infer<typeof ManifestBundle>;

export const ManifestProcess = z
  .object({
    name: name("process", "daemon"),
    bundle: name("bundle", "daemon"),
    run: z.array(z.string().min(1)).min(1).optional(),
    env: z.record(z.string(), z.string()).optional(),
    "restart-on": z.array(z.string().min(1)).optional(),
  })
  .strict();
export type ManifestProcess = z.infer<typeof ManifestProcess>;

export const ManifestState = z
  .object({
    name: name("state", "counts"),
    readable: z.boolean().default(false),
  })
  .strict();
export type ManifestState = z.infer<typeof ManifestState>;

/** `<module>/<state>`. */
export const StateRef = z.string().regex(/^[a-z][a-z0-9-]{0,62}\/[a-z][a-z0-9-]{0,62}$/, {
  error: 'a read names a state as "<module>/<state>" (e.g. "counter/counts")',
});

/** `<module>/<tool>`. */
export const ToolRef = z
  .string()
  .regex(new RegExp(`^[a-z][a-z0-9-]{0,62}/${TOOL_NAME_PATTERN.source.slice(1, -1)}$`), {
    error: 'a call names a tool as "<module>/<tool>" (e.g. "hello/greet")',
  });

export const ConfigDeclaration = z
  .object({
    description: z.string().optional(),
    default: z.json().optional(),
  })
  .strict();
export type ConfigDeclaration = z.infer<typeof ConfigDeclaration>;

const ConfigKeyName = z.string().regex(KEY_NAME_PATTERN, {
  error: "a config key is a lowercase letter, then lowercase letters, digits, _ or - (e.g. \"greeting\")",
});

export const OwnSecret = z.object({ path: z.string().min(1) }).strict();
export type OwnSecret = z.infer<typeof OwnSecret>;

export const Manifest = z
  .object({
    module: name("module", "hello"),
    description: z.string().optional(),
    bundles: z.array(ManifestBundle).default([]),
    processes: z.array(ManifestProcess).default([]),
    states: z.array(ManifestState).default([]),
    reads: z.array(StateRef).default([]),
    calls: z.array(ToolRef).default([]),
    config: z.record(ConfigKeyName, ConfigDeclaration).default({}),
    "own-secrets": z.record(ConfigKeyName, OwnSecret).default({}),
  })
  .strict();
/** A manifest as written (defaults not yet filled in). */
export type ManifestInput = z.input<typeof Manifest>;
/** A manifest after parsing: every list and map present. */
export type Manifest = z.infer<typeof Manifest>;

/** The JSON Schema of a manifest, for editors. */
export function manifestJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(Manifest, { io: "input" }) as Record<string, unknown>;
}
