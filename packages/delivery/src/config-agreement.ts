/**
 * Whether a module's tools and its manifest agree on its config: the zod schema a tools entry
 * gives `defineModule({ config })` and the keys the manifest declares must have the same keys and
 * types (an enum's values included). The check runs no module code: it is a file of types the
 * builder adds to the type check, where each side is assigned to the other.
 *
 * Rules the type system does not carry (`minimum`, `pattern`, …) are the manifest's: they are
 * enforced where values are set (`mesh config set`) and checked on the default
 * (`mesh manifest check`).
 */
import type { ConfigDeclaration, ConfigValueSchema, Manifest } from "@mesh/protocol";

/** The file of types the builder adds beside a module's sources while it type-checks them. */
export const CONFIG_CHECK_FILE = "__mesh_config_check__.ts";

/**
 * The check file's text, or undefined when no bundle loads tools. A module whose `defineModule`
 * takes no config schema agrees with any manifest (`ModuleConfigOf` gives the manifest's side).
 */
export function configAgreementFile(manifest: Manifest): string | undefined {
  const loads = manifest.bundles
    .filter((b) => b.language === "typescript")
    .flatMap((b) => b.loads ?? []);
  if (loads.length === 0) return undefined;
  const lines = [
    "// Written by the mesh's builder while it type-checks; never part of a bundle.",
    'import type { ModuleConfigOf } from "@mesh/sdk";',
    `type DeclaredInManifest = ${declaredType(manifest.config)};`,
    "declare const manifestSide: DeclaredInManifest;",
  ];
  [...new Set(loads)].sort().forEach((load, i) => {
    const from = `./${load.replace(/\.(m?ts|tsx)$/, ".js")}`;
    lines.push(
      `// ${load}`,
      `declare const schemaSide${i}: ModuleConfigOf<typeof import(${JSON.stringify(from)}), DeclaredInManifest>;`,
      `export const theManifestDeclaresEveryKeyOfTheSchemaIn${i}: DeclaredInManifest = schemaSide${i};`,
      `export const theSchemaDeclaresEveryKeyOfTheManifestIn${i}: typeof schemaSide${i} = manifestSide;`,
    );
  });
  return `${lines.join("\n")}\n`;
}

/** The manifest's config as a TypeScript type: `{ "max": number; "mode": "a" | "b" }`. */
export function declaredType(config: Readonly<Record<string, ConfigDeclaration>>): string {
  const keys = Object.keys(config).sort();
  if (keys.length === 0) return "{}";
  return `{ ${keys.map((k) => `${JSON.stringify(k)}: ${valueType(config[k] ?? {})}`).join("; ")} }`;
}

/** A declared value's type; `any` when the key declares no type, so it agrees with anything. */
function valueType(schema: ConfigValueSchema): string {
  if (schema.enum !== undefined) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.type === undefined) return "any";
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return [
    ...new Set(
      types.map((t) => {
        switch (t) {
          case "integer":
          case "number":
            return "number";
          case "array":
            return `Array<${schema.items === undefined ? "any" : valueType(schema.items)}>`;
          case "object":
            return "{ [key: string]: any }";
          default:
            return t;
        }
      }),
    ),
  ].join(" | ");
}
