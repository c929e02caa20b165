/**
 * `mesh init --language python|go`: a module's folder in that language, made from the example the
 * mesh ships for it (examples/modules/hello-<language>) with the module's name put in — a daemon
 * serving the tool `greet`, its config key, its secret, and a test that needs no mesh.
 */
import { readFile, readdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { EXAMPLES_DIR } from "../../shipped.js";

/** The languages `mesh init` writes a module in; typescript is init's own templates. */
export const INIT_LANGUAGES = ["typescript", "python", "go"] as const;
export type InitLanguage = (typeof INIT_LANGUAGES)[number];

export function initLanguage(value: string | undefined): InitLanguage {
  const language = value ?? "typescript";
  if (!(INIT_LANGUAGES as readonly string[]).includes(language)) {
    throw new MeshError(
      ErrorCode.USAGE,
      `mesh init writes modules in ${INIT_LANGUAGES.join(", ")}, not ${JSON.stringify(language)}; give --language with one of those (another language needs a build module of its own, docs/decisions/0160)`,
    );
  }
  return language as InitLanguage;
}

/** The example's files, path → text, with its module's name replaced by `name`. */
export async function exampleFiles(
  language: Exclude<InitLanguage, "typescript">,
  name: string,
): Promise<Record<string, string>> {
  const example = `hello-${language}`;
  const dir = join(EXAMPLES_DIR, example);
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const out: Record<string, string> = {};
  for (const entry of entries) {
    if (!entry.isFile() || entry.parentPath.includes("__pycache__")) continue;
    const path = relative(dir, join(entry.parentPath, entry.name)).split(sep).join("/");
    const text = await readFile(join(dir, path), "utf8");
    out[path] = text.replaceAll(example, name);
  }
  return out;
}
