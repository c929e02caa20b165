/**
 * `mesh manifest check PATH [--json]`: checks a manifest file (`mesh.yaml`, `mesh.yml`,
 * `mesh.json`) or the folder holding one, and prints every problem with where it is, the rule it
 * breaks and what to write instead. Exit code 3 when there is a problem.
 */
import { stat } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Command } from "commander";
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import { readRegularFile } from "@mesh/delivery";
import {
  MANIFEST_FILE_NAMES,
  MAX_MANIFEST_TEXT,
  manifestFormatOf,
  parseManifestText,
  problem,
  refused,
  type ManifestProblem,
} from "@mesh/core";
import { ExitCode, printJson } from "../../output.js";
import { act } from "../../verb.js";

export interface ManifestCheckOptions {
  readonly json?: boolean;
}

/** The manifest file at `path`, or the one in the folder `path`. */
export async function findManifestFile(path: string): Promise<string> {
  const info = await stat(path).catch((error: unknown) => {
    throw new MeshError(
      ErrorCode.USAGE,
      `${JSON.stringify(path)} does not exist (${(error as NodeJS.ErrnoException).code ?? "unreadable"}); give a manifest file or a module's folder`,
      { path },
    );
  });
  if (!info.isDirectory()) return path;
  for (const name of MANIFEST_FILE_NAMES) {
    const candidate = join(path, name);
    if ((await stat(candidate).catch(() => undefined))?.isFile() === true) return candidate;
  }
  throw new MeshError(
    ErrorCode.NOT_FOUND,
    `the folder ${JSON.stringify(path)} holds no manifest (looked for ${MANIFEST_FILE_NAMES.join(", ")}); write one there`,
    { path },
  );
}

export async function manifestCheckVerb(
  path: string,
  options: ManifestCheckOptions,
): Promise<ExitCode> {
  const file = await findManifestFile(path);
  const format = manifestFormatOf(basename(file));
  if (format === undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      `${JSON.stringify(file)} is neither YAML nor JSON by its name; name it mesh.yaml or mesh.json`,
      { path: file },
    );
  }
  // Only a regular file is read (a FIFO would wait forever for a writer), and only so much of it:
  // a longer one is refused as too large without being read.
  const size = (await stat(file)).size;
  const check =
    size > MAX_MANIFEST_TEXT * 4
      ? refused([
          problem(
            "too-large",
            [],
            { missing: true },
            `the manifest is ${size} bytes long, more than a manifest may have (${MAX_MANIFEST_TEXT} characters)`,
            "keep data out of the manifest: ship it in a bundle, or as config defaults the module reads",
          ),
        ])
      : parseManifestText((await readManifestFile(file)).toString("utf8"), format);
  if (check.ok) {
    if (options.json === true) printJson({ ok: true, file, module: check.manifest.module });
    else process.stdout.write(`${file}: ${check.manifest.module}'s manifest is good\n`);
    return ExitCode.ok;
  }
  if (options.json === true) {
    printJson({ ok: false, file, code: ErrorCode.MANIFEST_INVALID, problems: check.problems });
  } else {
    const lines = [`${file}: ${check.problems.length} problem(s)`];
    for (const p of check.problems) lines.push(describeProblem(file, p));
    process.stdout.write(`${lines.join("\n")}\n`);
  }
  return ExitCode.refused;
}

function readManifestFile(file: string): Promise<Buffer> {
  return readRegularFile(file, { maxBytes: MAX_MANIFEST_TEXT * 4, what: "the manifest" }).catch(
    (error: unknown) => {
      if (isMeshError(error, ErrorCode.SOURCE_UNAVAILABLE))
        throw new MeshError(ErrorCode.USAGE, error.message, { path: file, cause: error });
      throw error;
    },
  );
}

function describeProblem(file: string, p: ManifestProblem): string {
  const where = p.line === undefined ? file : `${file}:${p.line}:${p.column ?? 1}`;
  return `  ${where} ${p.path === "" ? "(the manifest)" : p.path}: ${p.message}\n    rule: ${p.rule} [${p.code}]\n    fix: ${p.fix}`;
}

export function registerManifestVerbs(program: Command): void {
  act(
    program
      .command("manifest")
      .description("Work with module manifests.")
      .command("check")
      .description(
        "Check a manifest (mesh.yaml / mesh.json, or a folder with one) and print every problem.",
      )
      .argument("<path>", "the manifest file, or the module's folder")
      .option("--json", "print the problems as JSON"),
    manifestCheckVerb,
  );
}
