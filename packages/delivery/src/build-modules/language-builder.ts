/**
 * What a build module does for its language, on disk only: build the bundles of that language in
 * a copy of a module's source. The build module around it (build-module.ts) fetches the source and
 * stores what this returns; `buildSource` calls the same builders in-process.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { Manifest, ManifestBundle } from "@mesh/protocol";
import type { ArchiveFile } from "../pack.js";

export interface LanguageBuildInput {
  /** The source: a copy at `<work>/source`, never the author's folder. */
  readonly root: string;
  /** Where each bundle may be built, as `<outRoot>/<bundle>`. */
  readonly outRoot: string;
  /** The checked manifest of the whole module. */
  readonly manifest: Manifest;
  /** The bundles of this language, in the manifest's order. */
  readonly bundles: readonly ManifestBundle[];
  /** Where the module's folder is on this machine, when it is a folder here (its own dependencies). */
  readonly origin: string | undefined;
  readonly say: (line: string) => void;
  readonly signal: AbortSignal | undefined;
}

/** One bundle's files, and how a process of it runs when its manifest gives no `run`. */
export interface BuiltFiles {
  readonly bundle: string;
  readonly files: readonly ArchiveFile[];
  readonly run?: readonly string[];
}

export type LanguageBuild =
  | { readonly ok: true; readonly bundles: readonly BuiltFiles[] }
  | { readonly ok: false; readonly error: string };

export interface LanguageBuilder {
  readonly language: string;
  /** What the builder needs on its machine, in words (said in its registration). */
  readonly toolchain: string;
  build(input: LanguageBuildInput): Promise<LanguageBuild>;
}

/** Runs a program of the build machine's toolchain: execFile, promised. */
export const runTool = promisify(execFile);

/** What a failed `runTool` says when its program is not on the build machine; else undefined. */
export function notInstalled(error: unknown, program: string, apt: string): string | undefined {
  return (error as { code?: string }).code === "ENOENT"
    ? `${program} is not installed on the build machine: install it (apt-get install ${apt})`
    : undefined;
}
