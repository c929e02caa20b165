/**
 * One build as the builder daemon makes it (decision 0160): the manifest checked, prebuilt
 * bundles repacked here, the source packed as a reproducible archive and stored by digest, and
 * the bundles of each language asked of that language's build module on `mesh.build.<language>`.
 * A build module that does not answer is BUILD_MODULE_UNAVAILABLE (the build waits); its answer
 * that the build failed is a failed build.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { canonicalJson } from "@mesh/core";
import { isBusTrouble, request, sha256, type ArtifactStore, type MeshBus } from "@mesh/bus";
import {
  BUILD_ASK_TIMEOUT_MS,
  BuildAnswer,
  ErrorCode,
  MeshError,
  buildAskSubject,
  buildModuleName,
  type BuildAsk,
} from "@mesh/protocol";
import type { SourceBuild } from "./build-source.js";
import { LOG_TAIL_CHARS, prebuiltFiles, readManifest } from "./source-manifest.js";
import type { BuiltFiles } from "./build-modules/language-builder.js";
import {
  PREBUILT,
  bundlesByLanguage,
  knownLanguages,
  packBundles,
  resolveManifest,
  unknownLanguageError,
  type ArchiveOutcome,
} from "./build-plan.js";
import type { BuildWaits } from "./build-waits.js";
import { packArchive } from "./pack.js";
import { listSourceFiles } from "./source.js";

export interface BuildWithModules {
  /** The materialised source. */
  readonly root: string;
  readonly module: string;
  readonly build: string;
  readonly bus: MeshBus;
  readonly artifacts: ArtifactStore;
  /** The languages registered in mesh-build-modules. */
  readonly languages: readonly string[];
  readonly waits: BuildWaits;
  readonly signal: AbortSignal;
  readonly askTimeoutMs?: number;
}

/** The outcome of a build; the archives' bytes are in the store, only their digests here. */
export type ModuleBuild =
  | (Omit<Extract<SourceBuild, { ok: true }>, "archives"> & {
      readonly archives: readonly ArchiveOutcome[];
    })
  | Extract<SourceBuild, { ok: false }>;

export async function buildWithModules(input: BuildWithModules): Promise<ModuleBuild> {
  const { root, signal } = input;
  const log: string[] = [];
  const say = (line: string): void => void log.push(line);
  const fail = (error: string): ModuleBuild => {
    say(`error: ${error}`);
    return { ok: false, error: error.split("\n")[0] ?? error, log: tail(log) };
  };
  const read = await readManifest(root);
  if (!read.ok) return fail(read.error);
  const manifest = read.manifest;
  say(`manifest ${read.file}: ${manifest.module}, ${manifest.bundles.length} bundle(s)`);
  if (manifest.module !== input.module) {
    return fail(
      `the manifest names the module ${JSON.stringify(manifest.module)}, but it is registered as ${JSON.stringify(input.module)}; make the two agree`,
    );
  }
  const unknown = unknownLanguageError(manifest, knownLanguages(input.languages));
  if (unknown !== undefined) return fail(unknown);

  const outcomes = new Map<string, ArchiveOutcome>();
  const prebuilt = new Map<string, BuiltFiles>();
  for (const bundle of manifest.bundles.filter((b) => b.language === PREBUILT)) {
    const files = await prebuiltFiles(root, bundle, say, signal);
    if (typeof files === "string") return fail(files);
    prebuilt.set(bundle.name, { bundle: bundle.name, files });
  }
  if (prebuilt.size > 0) {
    const only = { ...manifest, bundles: manifest.bundles.filter((b) => prebuilt.has(b.name)) };
    for (const archive of packBundles(only, prebuilt, say)) {
      await input.artifacts.put(archive.bytes, { signal });
      outcomes.set(archive.bundle, archive);
    }
  }
  const byLanguage = bundlesByLanguage(manifest);
  if (byLanguage.size > 0) {
    const source = await storeSource(root, input.artifacts, signal);
    say(`source archive sha256 ${source}`);
    for (const [language, bundles] of byLanguage) {
      const ask: BuildAsk = {
        module: input.module,
        build: input.build,
        language,
        source,
        bundles: bundles.map((b) => b.name),
      };
      const answer = await askBuildModule(input, ask);
      say(`${buildModuleName(language)} answered:`);
      for (const line of answer.log.split("\n")) if (line !== "") say(`  ${line}`);
      if (!answer.ok) return fail(answer.error);
      for (const name of ask.bundles) {
        const got = answer.bundles.find((b) => b.name === name);
        // A build module that says built without storing the archive is broken, not the source.
        if (got === undefined || (await input.artifacts.info(got.digest, { signal })) === undefined)
          return fail(
            `${buildModuleName(language)} answered without the stored archive of bundle ${name}; see its log`,
          );
        outcomes.set(name, {
          bundle: name,
          digest: got.digest,
          size: got.size,
          ...(got.run === undefined ? {} : { run: got.run }),
        });
      }
    }
  }
  const archives = manifest.bundles.map((b) => outcomes.get(b.name)).filter((a) => a !== undefined);
  const resolved = resolveManifest(manifest, archives);
  const manifestDigest = sha256(Buffer.from(canonicalJson(resolved), "utf8"));
  say(`resolved manifest ${manifestDigest}`);
  return { ok: true, manifest: resolved, manifestDigest, archives, log: tail(log) };
}

/** The source's files as a reproducible archive in the store; its digest. */
async function storeSource(
  root: string,
  artifacts: ArtifactStore,
  signal: AbortSignal,
): Promise<string> {
  const paths = await listSourceFiles(root, { signal });
  const files = await Promise.all(
    paths.map(async (path) => ({ path, bytes: await readFile(join(root, path)) })),
  );
  return (await artifacts.put(packArchive(files), { signal })).digest;
}

/** One ask; the build module not answering (not running, restarting, gone mid-build) waits. */
async function askBuildModule(input: BuildWithModules, ask: BuildAsk): Promise<BuildAnswer> {
  const subject = buildAskSubject(ask.language);
  let reply: unknown;
  try {
    reply = await request(input.bus, subject, ask, {
      timeoutMs: input.askTimeoutMs ?? BUILD_ASK_TIMEOUT_MS,
      signal: input.signal,
    });
  } catch (error) {
    if (input.signal.aborted || !isBusTrouble(error)) throw error;
    throw new MeshError(
      ErrorCode.BUILD_MODULE_UNAVAILABLE,
      `${buildModuleName(ask.language)} does not answer on ${subject} (${error instanceof MeshError ? error.code : "no answer"})`,
      { module: ask.module, key: ask.language, subject, cause: error },
    );
  }
  const parsed = BuildAnswer.safeParse(reply);
  if (!parsed.success) {
    return {
      ok: false,
      error: `${buildModuleName(ask.language)}'s answer is not a build answer: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      log: "",
    };
  }
  await input.waits.answered(undefined, ask.language);
  return parsed.data;
}

function tail(lines: readonly string[]): string {
  const text = lines.join("\n");
  return text.length <= LOG_TAIL_CHARS ? text : `…${text.slice(-LOG_TAIL_CHARS)}`;
}
