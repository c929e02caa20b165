/**
 * The shape of a module's manifest (`mesh.yaml` / `mesh.json`). This schema checks fields one by
 * one, and is what editors check a manifest against (as JSON Schema, `docs/manifest.schema.json`);
 * the checks across fields (a process names an existing bundle, the runtime's rules, …) are in
 * `@mesh/core`'s `checkManifest`, which reports every problem at once.
 *
 * Shape rules that JSON Schema can say are written as patterns rather than refinements, so an
 * editor enforces them too.
 */
import { z } from "zod";
import { RolloutPolicy } from "./rollout-policy.js";
import {
  BUILD_ID_PATTERN,
  KEY_NAME_PATTERN,
  LANGUAGE_PATTERN,
  NAME_PATTERN,
  TOOL_NAME_PATTERN,
} from "./names.js";
import { DIGEST_PATTERN } from "./keys.js";

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

/**
 * A bundle's language: `prebuilt` (an archive taken as it is), or a language a build module of
 * the mesh builds (`typescript`, `python`, `go` ship with it; decision 0160). Which languages a
 * mesh builds is known where its build modules are (`mesh module add` and the builder refuse the
 * others), so the schema takes any language name.
 */
export const Language = z.string().regex(LANGUAGE_PATTERN, {
  error: 'a language is "typescript", "python", "go", another a build module builds, or "prebuilt"',
});
export type Language = z.infer<typeof Language>;

/**
 * A path inside a bundle: relative, `/` between non-empty parts, no part `.` or `..`, so it can
 * never leave the bundle's folder.
 */
// eslint-disable-next-line no-control-regex -- a NUL ends a path for the OS, so a path with one is refused
export const BUNDLE_PATH_PATTERN = /^(?:(?!\.\.?\/)[^/\u0000]+\/)*(?!\.\.?$)[^/\u0000]+$/;
export const BundleRelativePath = z.string().regex(BUNDLE_PATH_PATTERN, {
  error: 'a path inside a bundle is relative, with no empty, "." or ".." part (e.g. "src/main.ts")',
});

/** Where a declared file is written on the node: absolute, with no empty, `.` or `..` part. */
// eslint-disable-next-line no-control-regex -- as above
export const ABSOLUTE_PATH_PATTERN = /^(?:\/(?!\.\.?(?:\/|$))[^/\u0000]+)+$/;

/**
 * A declared file's path: relative to the node's secrets folder for the module
 * (`<root>/secrets/<module>/`), with no empty, `.` or `..` part, so a manifest can never name a
 * file elsewhere on the node.
 */
export const SECRET_PATH_PATTERN = BUNDLE_PATH_PATTERN;

/** An environment variable's name; `MESH_` names are the mesh's own and set by it. */
export const ENV_NAME_PATTERN = /^(?!MESH_)[A-Za-z_][A-Za-z0-9_]*$/;
/** The prefix of the variables the mesh sets for a process. */
export const RESERVED_ENV_PREFIX = "MESH_";

/** `config`, or a resource id `<module>.<id>` (e.g. `hello.need-api-token`). */
export const RESTART_ON_PATTERN = /^(?:config|[a-z][a-z0-9-]{0,62}\.[a-z][a-z0-9_-]{0,127})$/;
/** The `restart-on` entry that restarts a process when one of its module's config values moves. */
export const RESTART_ON_CONFIG = "config";

export const ManifestBundle = z
  .object({
    name: name("bundle", "tools"),
    language: Language.describe(
      "typescript: bundled with esbuild; python: its files with mesh_sdk, run by python3; go: a static binary; prebuilt: an archive taken as it is (needs source and digest). Each is built by its language's build module",
    ),
    entrypoints: z
      .array(BundleRelativePath)
      .default([])
      .describe(
        "Files the builder bundles (typescript: each is built to the same path ending in .js); the first is what a process runs when it gives no run",
      ),
    loads: z
      .array(BundleRelativePath)
      .optional()
      .describe(
        "Files the tool runtime loads from this bundle (for typescript, entrypoints as written). A bundle with loads is a tools bundle, delivered only where node-tools runs",
      ),
    source: z
      .string()
      .regex(BUNDLE_PATH_PATTERN, {
        error:
          'a prebuilt bundle\'s source is a path inside the module\'s source, relative to the manifest, with no empty, "." or ".." part (e.g. "dist/app.tar.gz")',
      })
      .optional()
      .describe(
        "The archive's path inside the module's source, relative to the manifest (prebuilt only)",
      ),
    digest: Digest.optional().describe(
      "The archive's SHA-256 (prebuilt; filled in by the builder otherwise)",
    ),
    size: z.number().int().nonnegative().optional(),
  })
  .strict();
export type ManifestBundle = z.infer<typeof ManifestBundle>;

export const ManifestProcess = z
  .object({
    name: name("process", "daemon"),
    bundle: name("bundle", "daemon").describe(
      "The bundle (of this manifest) the process runs from",
    ),
    run: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        "argv, paths relative to the bundle's folder; when omitted, the bundle's first entrypoint as built, run by its language's interpreter",
      ),
    env: z
      .record(
        z.string().regex(ENV_NAME_PATTERN, {
          error:
            "an environment variable is a letter or _, then letters, digits or _, and never starts with MESH_",
        }),
        z.string(),
      )
      .optional(),
    "restart-on": z
      .array(
        z.string().regex(RESTART_ON_PATTERN, {
          error:
            'a restart-on entry is "config" or a resource id "<module>.<id>" (e.g. "hello.need-api-token")',
        }),
      )
      .optional()
      .describe(
        "Resource ids whose change restarts the process, or config: restart when one of the module's config values moves",
      ),
  })
  .strict();
export type ManifestProcess = z.infer<typeof ManifestProcess>;

export const ManifestState = z
  .object({
    name: name("state", "counts"),
    readable: z
      .boolean()
      .default(false)
      .describe("Whether other modules may be granted to read it"),
  })
  .strict();
export type ManifestState = z.infer<typeof ManifestState>;

/** `<module>/<state>`. */
export const StateRef = z.string().regex(/^[a-z][a-z0-9-]{0,62}\/[a-z][a-z0-9-]{0,62}$/, {
  error: 'a read names a state as "<module>/<state>" (e.g. "counter/counts")',
});

/** `mesh/<name>`: one of the mesh's own buckets, which only a mesh part writes (decision 0122). */
export const MeshWriteRef = z.string().regex(/^mesh\/[a-z][a-z0-9-]{0,62}$/, {
  error:
    'a write names one of the mesh\'s own buckets as "mesh/<name>" (e.g. "mesh/wants"); a module writes its own states without naming them',
});

/** `<module>/<tool>`. */
export const ToolRef = z
  .string()
  .regex(new RegExp(`^[a-z][a-z0-9-]{0,62}/${TOOL_NAME_PATTERN.source.slice(1, -1)}$`), {
    error: 'a call names a tool as "<module>/<tool>" (e.g. "hello/greet")',
  });

/** The JSON types a config value may be declared as. */
export const ConfigJsonType = z.enum([
  "string",
  "number",
  "integer",
  "boolean",
  "array",
  "object",
  "null",
]);
export type ConfigJsonType = z.infer<typeof ConfigJsonType>;

/**
 * The part of JSON Schema a config key (and each item of an array value) may declare. A key that
 * declares none of it takes any JSON value, as before.
 */
export interface ConfigValueSchema {
  type?: ConfigJsonType | ConfigJsonType[] | undefined;
  enum?: z.core.util.JSONType[] | undefined;
  const?: z.core.util.JSONType | undefined;
  minimum?: number | undefined;
  maximum?: number | undefined;
  exclusiveMinimum?: number | undefined;
  exclusiveMaximum?: number | undefined;
  multipleOf?: number | undefined;
  minLength?: number | undefined;
  maxLength?: number | undefined;
  pattern?: string | undefined;
  items?: ConfigValueSchema | undefined;
  minItems?: number | undefined;
  maxItems?: number | undefined;
  uniqueItems?: boolean | undefined;
}

const count = z.number().int().nonnegative();
const valueSchemaShape = {
  type: z
    .union([ConfigJsonType, z.array(ConfigJsonType).min(1)])
    .optional()
    .describe("The value's JSON type, or a list of types it may have"),
  enum: z.array(z.json()).min(1).optional().describe("The only values allowed"),
  const: z.json().optional().describe("The one value allowed"),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  exclusiveMinimum: z.number().optional(),
  exclusiveMaximum: z.number().optional(),
  multipleOf: z.number().positive().optional(),
  minLength: count.optional(),
  maxLength: count.optional(),
  pattern: z
    .string()
    .optional()
    .describe("A regular expression (JavaScript syntax, unanchored) a string value matches"),
  get items(): z.ZodOptional<z.ZodType<ConfigValueSchema>> {
    return ConfigValueSchema.optional().describe("What each item of an array value is");
  },
  minItems: count.optional(),
  maxItems: count.optional(),
  uniqueItems: z.boolean().optional(),
};

export const ConfigValueSchema: z.ZodType<ConfigValueSchema> = z
  .object(valueSchemaShape)
  .strict()
  .meta({ id: "ConfigValueSchema" });

export const ConfigDeclaration = z
  .object({
    description: z.string().optional(),
    default: z.json().optional(),
    ...valueSchemaShape,
  })
  .strict();
export type ConfigDeclaration = z.infer<typeof ConfigDeclaration>;

const ConfigKeyName = z.string().regex(KEY_NAME_PATTERN, {
  error:
    'a config key is a lowercase letter, then lowercase letters, digits, _ or - (e.g. "greeting")',
});

const SecretName = z.string().regex(KEY_NAME_PATTERN, {
  error:
    'a secret name is a lowercase letter, then lowercase letters, digits, _ or - (e.g. "api-token")',
});

export const OwnSecret = z
  .object({
    path: z
      .string()
      .regex(SECRET_PATH_PATTERN, {
        error:
          'a secret\'s path is relative to the node\'s secrets folder for the module, with no empty, "." or ".." part (e.g. "token" or "api/token")',
      })
      .describe(
        "Where the node writes the file (mode 0600), relative to <root>/secrets/<module>/; never outside it",
      ),
  })
  .strict();
export type OwnSecret = z.infer<typeof OwnSecret>;

/**
 * A module that changes how the machine itself is set up (its firewall, packages or services)
 * says so with a filter. An adopted machine keeps that setup to its own administration, so there
 * the module is left out of the node's composition altogether: nothing delivered, nothing run,
 * nothing served. See docs/decisions/0012-filters-on-adopted-machines.md.
 */
export const ManifestFilter = z
  .object({
    description: z
      .string()
      .min(1)
      .describe("What the module changes on the machine, for the operator"),
  })
  .strict();
export type ManifestFilter = z.infer<typeof ManifestFilter>;

export const Manifest = z
  .object({
    module: name("module", "hello"),
    description: z.string().optional(),
    bundles: z.array(ManifestBundle).default([]),
    processes: z.array(ManifestProcess).default([]),
    states: z.array(ManifestState).default([]),
    reads: z
      .array(StateRef)
      .default([])
      .describe(
        'States of other modules it reads: "<module>/<state>"; a mesh part also names the mesh\'s own buckets as "mesh/<name>"',
      ),
    writes: z
      .array(MeshWriteRef)
      .optional()
      .describe(
        "The mesh's own buckets it writes, \"mesh/<name>\": only the mesh's parts (mesh-indexer, mesh-builder, mesh-assigner)",
      ),
    calls: z.array(ToolRef).default([]).describe('Tools it calls: "<module>/<tool>"'),
    config: z.record(ConfigKeyName, ConfigDeclaration).default({}),
    "own-secrets": z
      .record(SecretName, OwnSecret)
      .default({})
      .describe("Files the module is given, by name; broker is the module's own bus credential"),
    filter: ManifestFilter.optional().describe(
      "Set when the module changes the machine's own setup; it is then left out on adopted machines",
    ),
    "tools-idle": z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe(
        "Seconds without a call after which the runtime stops this module's tools worker until the next call (0: never); the node's idle time (10 min) when omitted",
      ),
    rollout: RolloutPolicy.optional().describe(
      "How a new build reaches the fleet: canary, batches, health gates (docs/rollouts.md)",
    ),
  })
  .strict();
/** A manifest as written (defaults not yet filled in). */
export type ManifestInput = z.input<typeof Manifest>;
/** A manifest after parsing: every list and map present. */
export type Manifest = z.infer<typeof Manifest>;

/**
 * The fields an object in a manifest may have, read from the schema: the manifest's own (no
 * `top`), or an entry's of the top-level field `top` (a bundle, a process, a state, a config key's
 * declaration, an own secret, the filter, the rollout policy); none where `top` holds no objects.
 */
export function manifestFields(top?: string): string[] {
  if (top === undefined) return Object.keys(Manifest.shape);
  let schema: z.ZodType | undefined = Object.hasOwn(Manifest.shape, top)
    ? (Manifest.shape as Record<string, z.ZodType>)[top]
    : undefined;
  while (schema !== undefined && !(schema instanceof z.ZodObject)) {
    schema =
      schema instanceof z.ZodDefault || schema instanceof z.ZodOptional
        ? (schema.unwrap() as z.ZodType)
        : schema instanceof z.ZodArray
          ? (schema.element as z.ZodType)
          : schema instanceof z.ZodRecord
            ? (schema.valueType as z.ZodType)
            : undefined;
  }
  return schema === undefined ? [] : Object.keys(schema.shape);
}

/** The JSON Schema of a manifest, for editors (kept in `docs/manifest.schema.json`). */
export function manifestJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(Manifest, { io: "input" }) as Record<string, unknown>;
  return { ...schema, title: "mesh module manifest (mesh.yaml / mesh.json)" };
}
