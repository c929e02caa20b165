/**
 * The mesh.yaml of a module an end-to-end test writes into a sources folder: TypeScript, a
 * `tools` bundle (src/tools.ts) and/or a `daemon` bundle (src/daemon.ts) run as one process,
 * config keys with defaults, own secrets. Written once here, so the tests say what their module
 * is (tools only, a daemon that needs its token) rather than restate the manifest's layout; and
 * the module's folder, that manifest beside its bundles' sources.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface ModuleYaml {
  readonly module: string;
  readonly description: string;
  /** A `tools` bundle that loads src/tools.ts. */
  readonly tools?: boolean;
  /** A `daemon` bundle (src/daemon.ts) run as the process of this name. */
  readonly daemon?: string;
  /** Config keys: what each is, and its default. */
  readonly config?: Readonly<
    Record<string, { readonly description: string; readonly default: string | number }>
  >;
  /** Own secrets: each one's file name under the secret's folder. */
  readonly ownSecrets?: Readonly<Record<string, string>>;
}

/** The manifest's text, ending in a newline. */
export function moduleYaml(m: ModuleYaml): string {
  const lines = [`module: ${m.module}`, `description: ${m.description}`, "bundles:"];
  if (m.tools === true)
    lines.push(
      "  - name: tools",
      "    language: typescript",
      "    entrypoints: [src/tools.ts]",
      "    loads: [src/tools.ts]",
    );
  if (m.daemon !== undefined)
    lines.push(
      "  - name: daemon",
      "    language: typescript",
      "    entrypoints: [src/daemon.ts]",
      "processes:",
      `  - name: ${m.daemon}`,
      "    bundle: daemon",
    );
  const config = Object.entries(m.config ?? {});
  if (config.length > 0) lines.push("config:");
  for (const [key, { description, default: value }] of config)
    lines.push(`  ${key}:`, `    description: ${description}`, `    default: ${value}`);
  const secrets = Object.entries(m.ownSecrets ?? {});
  if (secrets.length > 0) lines.push("own-secrets:");
  for (const [name, path] of secrets) lines.push(`  ${name}:`, `    path: ${path}`);
  return `${lines.join("\n")}\n`;
}

/** The source of each bundle a module has: src/tools.ts, src/daemon.ts. */
export interface ModuleSources {
  readonly tools?: string;
  readonly daemon?: string;
}

/**
 * Writes the module's folder under `sources` (its mesh.yaml, and each bundle's source under src/)
 * and returns it; writing it again makes a new source revision.
 */
export async function writeModuleFolder(
  sources: string,
  m: ModuleYaml,
  code: ModuleSources,
): Promise<string> {
  const dir = join(sources, m.module);
  await mkdir(join(dir, "src"), { recursive: true });
  await writeFile(join(dir, "mesh.yaml"), moduleYaml(m));
  for (const bundle of ["tools", "daemon"] as const) {
    const text = code[bundle];
    if (text !== undefined) await writeFile(join(dir, "src", `${bundle}.ts`), text);
  }
  return dir;
}
