/**
 * `mesh init <name> [--tools] [--daemon] [--language L] [--dir DIR] [--sdk PATH]`: writes a module folder that
 * builds as it stands (mesh.yaml, package.json, tsconfig.json, a tool and/or a daemon with their
 * tests, a README), so `mesh module add` of it works at once.
 *
 * The SDK it depends on: inside the mesh's own repository, the workspace's package by a relative
 * `file:` path; elsewhere the path or packed tarball `--sdk` (or `MESH_SDK`) names, else the
 * SDK this `mesh` itself runs with.
 */
import { existsSync, realpathSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import type { Command } from "commander";
import { ErrorCode, MeshError, checkName } from "@mesh/protocol";
import { act, answer, type ExitCode } from "../../verb.js";
import { initFiles } from "./init-templates.js";
import { INIT_LANGUAGES, exampleFiles, initLanguage } from "./init-languages.js";

export interface InitOptions {
  readonly tools?: boolean;
  readonly daemon?: boolean;
  readonly dir?: string;
  readonly sdk?: string;
  readonly json?: boolean;
  /** typescript (the default), python or go. */
  readonly language?: string;
}

/** The environment variable that names the SDK to depend on outside the repository. */
export const SDK_ENV = "MESH_SDK";

export async function initVerb(name: string, options: InitOptions): Promise<ExitCode> {
  checkName("module", name);
  const dir = resolve(options.dir ?? name);
  if (existsSync(dir) && (await readdir(dir)).length > 0) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${JSON.stringify(dir)} is not empty, and mesh init writes a new module's folder; give an empty or new folder with --dir`,
      { path: dir },
    );
  }
  const language = initLanguage(options.language);
  if (language !== "typescript") return initOtherLanguage(name, dir, language, options);
  const daemon = options.daemon === true;
  const tools = options.tools === true || !daemon;
  const sdk = sdkDependency(dir, options.sdk ?? process.env[SDK_ENV]);
  const files = initFiles({ name, tools, daemon, sdk });
  return writeModule(dir, files, options, { module: name, dir, sdk }, (shown, written) => [
    `wrote the module ${name} in ${shown}: ${written.join(", ")}`,
    `  @mesh/sdk: ${sdk}`,
    "next:",
    `  cd ${shown} && npm install && npm test`,
    `  mesh module add ${shown} && mesh assign ${name} --all`,
    ...(tools ? [`  mesh call ${name}/greet '{"name":"Ada"}'`] : []),
  ]);
}

/**
 * Writes the module's files and says so: the JSON answer (`json` and the files written) or the
 * lines `next` makes of the folder as the operator names it and the files.
 */
async function writeModule(
  dir: string,
  files: Record<string, string>,
  options: InitOptions,
  json: Record<string, unknown>,
  next: (shown: string, written: readonly string[]) => readonly string[],
): Promise<ExitCode> {
  await writeFiles(dir, files);
  const written = Object.keys(files).sort();
  const shown = relative(process.cwd(), dir) || ".";
  return answer(options, { ...json, files: written }, () => next(shown, written));
}

/** Writes each file (path → text) under `dir`, never over one that is there. */
async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text, { flag: "wx" });
  }
}

/** A python or go module: the shipped example's daemon and tool, under the module's name. */
async function initOtherLanguage(
  name: string,
  dir: string,
  language: "python" | "go",
  options: InitOptions,
): Promise<ExitCode> {
  const files = await exampleFiles(language, name);
  // The go example's logic is a package of its own that imports no SDK: it tests offline.
  const test = language === "python" ? "python3 -m unittest" : "go test ./greeting";
  return writeModule(dir, files, options, { module: name, dir, language }, (shown, written) => [
    `wrote the ${language} module ${name} in ${shown}: ${written.join(", ")}`,
    "next:",
    `  cd ${shown} && ${test}`,
    `  mesh module add ${shown} && printf 'a-token' | mesh secret set ${name} api-token`,
    `  mesh assign ${name} --all && mesh call ${name}/greet '{"name":"Ada"}'`,
  ]);
}

/**
 * `file:<path>` of the SDK: relative inside the repository the SDK lives in (so the folder can
 * move with it), absolute otherwise.
 */
export function sdkDependency(dir: string, given: string | undefined): string {
  if (given !== undefined && given !== "") {
    const path = resolve(given.replace(/^file:/, ""));
    if (!existsSync(path)) {
      throw new MeshError(
        ErrorCode.NOT_FOUND,
        `the SDK ${JSON.stringify(given)} does not exist; give the SDK's folder or a tarball made by npm pack`,
        { path },
      );
    }
    return `file:${path}`;
  }
  const own = ownSdk();
  const repository = repositoryOf(own);
  if (repository !== undefined && isInside(dir, repository)) {
    const path = relative(dir, own).split(sep).join("/");
    return `file:${path}`;
  }
  return `file:${own}`;
}

/** The folder of the SDK this command runs with. */
function ownSdk(): string {
  const require = createRequire(import.meta.url);
  return realpathSync(dirname(dirname(require.resolve("@mesh/sdk"))));
}

/** The repository root an SDK folder is a workspace of (`<root>/packages/sdk`), if it is one. */
function repositoryOf(sdk: string): string | undefined {
  const root = dirname(dirname(sdk));
  return existsSync(join(root, "package.json")) && existsSync(join(root, "packages", "cli"))
    ? root
    : undefined;
}

function isInside(dir: string, root: string): boolean {
  const rel = relative(root, dir);
  return rel !== "" && !rel.startsWith("..") && !rel.startsWith(sep);
}

export function registerInitVerb(program: Command): void {
  act(
    program
      .command("init")
      .description(
        "Write a new module's folder that builds as it stands: mesh.yaml, package.json, tsconfig.json, a tool and/or a daemon with tests, a README.",
      )
      .argument("<name>", "the module's name, e.g. notes")
      .option("--tools", "a tools bundle with a tool (the default)")
      .option("--daemon", "a daemon: a process with its own bus credential")
      .option("--dir <dir>", "where to write it (default ./<name>; must be empty or new)")
      .option(
        "--sdk <path>",
        `the @mesh/sdk to depend on: its folder or a tarball from npm pack (or set ${SDK_ENV}); default: the workspace's inside this repository, else the one this mesh runs with`,
      )
      .option(
        "--language <language>",
        `the module's language: ${INIT_LANGUAGES.join(", ")} (default typescript; python and go write a daemon serving a tool)`,
      )
      .option("--json", "print what was written as JSON"),
    initVerb,
  );
}
