/**
 * A build module (decision 0160): the daemon that builds one language's bundles for the builder.
 * At its start it says its language in `mesh-build-modules` (which is what makes the language one
 * this mesh builds, and what wakes builds that waited for it), then answers `mesh.build.<language>`:
 * it fetches the source archive by digest, checks and unpacks it, builds the bundles the ask
 * names with its language's builder, stores each archive in `mesh-artifacts`, and answers their
 * digests and the build log. A fault of the module's source is a failed answer, never a throw.
 *
 * An ask made again is answered by the build it repeats: the builder asks again when its ask goes
 * unanswered for BUILD_ASK_TIMEOUT_MS, which a build on a loaded machine can outlast, and each ask
 * built anew (behind the one before, builds being one at a time) would outlast it again — the
 * builder would wait for ever while this built the same source over and over. The asks being
 * built and the answers of the last few are kept by what they build (language, source, bundles).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ArtifactStore, KvBucket, serve, sha256, type MeshBus } from "@mesh/bus";
import { DaemonBase, Lifecycle, aborted } from "@mesh/kit";
import {
  BuildAsk,
  Bucket,
  ErrorCode,
  MESH_VERSION,
  MeshError,
  buildAskSubject,
  buildModuleName,
  type BuildAnswer,
} from "@mesh/protocol";
import { readManifest, LOG_TAIL_CHARS } from "../build-source.js";
import { unpackArchive } from "../source.js";
import { packBundles } from "../build-plan.js";
import type {
  BuiltFiles,
  LanguageBuild,
  LanguageBuildInput,
  LanguageBuilder,
} from "./language-builder.js";

/** How many builds' answers are kept for an ask made again (the builder asks one at a time). */
const KEPT_BUILDS = 16;

export interface BuildModuleOptions {
  readonly bus: MeshBus;
  readonly builder: LanguageBuilder;
  readonly log?: (line: string) => void;
  readonly now?: () => Date;
}

export class BuildModule extends DaemonBase {
  readonly #bus: MeshBus;
  readonly #builder: LanguageBuilder;
  readonly #log: (line: string) => void;
  readonly #now: () => Date;
  /** One build at a time: builds are CPU-bound, and the builder asks one at a time anyway. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The builds asked for, under way or answered lately, by what they build (oldest first). */
  readonly #builds = new Map<string, Promise<BuildAnswer>>();

  private constructor(options: BuildModuleOptions) {
    const log = options.log ?? (() => undefined);
    super({ log });
    this.#bus = options.bus;
    this.#builder = options.builder;
    this.#log = log;
    this.#now = options.now ?? (() => new Date());
  }

  static create(options: BuildModuleOptions): Promise<BuildModule> {
    return Promise.resolve(new BuildModule(options));
  }

  /** `mesh-build-<language>`. */
  get module(): string {
    return buildModuleName(this.#builder.language);
  }

  protected async work(signal: AbortSignal): Promise<void> {
    const language = this.#builder.language;
    const artifacts = await ArtifactStore.open(this.#bus, { signal });
    const registry = await KvBucket.open(this.#bus, Bucket.buildModules);
    const served = await serve(this.#bus, {
      name: this.module,
      version: MESH_VERSION,
      description: `builds the ${language} bundles of modules for the builder`,
      // Several copies of a build module share the asks.
      queue: this.module,
      endpoints: [
        {
          name: "build",
          subject: buildAskSubject(language),
          handler: (request) => this.#once(request.json(), artifacts, signal),
        },
      ],
      onRejected: (why, subject) => this.#log(`refused a message on ${subject}: ${why}`),
      onInternalError: (error, subject) =>
        this.#log(`a build ask on ${subject} failed: ${(error as Error).stack ?? String(error)}`),
    });
    try {
      // Said once it answers, so a builder woken by this finds it serving.
      await registry.put(
        language,
        {
          language,
          module: this.module,
          version: MESH_VERSION,
          toolchain: this.#builder.toolchain,
          started: this.#now().toISOString(),
        },
        { signal },
      );
      this.life.set(Lifecycle.running);
      this.#log(`running: building ${language} bundles on ${buildAskSubject(language)}`);
      await aborted(signal);
    } finally {
      await served.stop();
    }
  }

  /**
   * The answer to an ask: the build under way or answered lately of the same language, source
   * and bundles, or a new one, queued behind the others. An answer that threw (the bus in
   * trouble) is not kept: the builder's next ask builds again.
   */
  #once(body: unknown, artifacts: ArtifactStore, signal: AbortSignal): Promise<BuildAnswer> {
    const ask = this.#askOf(body);
    const key = JSON.stringify([ask.language, ask.source, [...ask.bundles].sort()]);
    const known = this.#builds.get(key);
    if (known !== undefined) {
      this.#log(`asked again for ${ask.module} ${ask.build}: answered by the same build`);
      return known;
    }
    const job = (): Promise<BuildAnswer> => this.#answer(ask, artifacts, signal);
    const run = this.#queue.then(job, job);
    this.#queue = run.catch(() => undefined);
    this.#builds.set(key, run);
    run.catch(() => this.#builds.get(key) === run && this.#builds.delete(key));
    while (this.#builds.size > KEPT_BUILDS) this.#builds.delete(this.#builds.keys().next().value!);
    return run;
  }

  #askOf(body: unknown): BuildAsk {
    const parsed = BuildAsk.safeParse(body);
    if (!parsed.success) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `a build ask is {module, build, language, source, bundles}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    }
    const ask = parsed.data;
    if (ask.language !== this.#builder.language) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `${this.module} builds ${this.#builder.language}, and the ask is for ${ask.language}; ask ${buildAskSubject(ask.language)}`,
      );
    }
    return ask;
  }

  async #answer(
    ask: BuildAsk,
    artifacts: ArtifactStore,
    signal: AbortSignal,
  ): Promise<BuildAnswer> {
    const log: string[] = [];
    const say = (line: string): void => {
      log.push(line);
    };
    const failed = (error: string): BuildAnswer => {
      say(`error: ${error}`);
      return { ok: false, error: error.split("\n")[0] ?? error, log: tail(log) };
    };
    this.#log(`building ${ask.module} ${ask.build}: ${ask.bundles.join(", ")}`);
    // The bus failing is not the build failing: it throws, and the builder asks again.
    const bytes = await artifacts.get(ask.source, { signal });
    if (bytes === undefined) return failed(`the source archive ${ask.source} is not in the store`);
    if (sha256(bytes) !== ask.source)
      return failed(`the source archive ${ask.source} does not have that digest`);
    const work = await mkdtemp(join(tmpdir(), `mesh-build-${ask.language}-`));
    try {
      try {
        await unpackArchive(bytes, join(work, "source"), { what: "the source archive" });
      } catch (error) {
        return failed(error instanceof Error ? error.message : String(error));
      }
      const read = await readManifest(join(work, "source"));
      if (!read.ok) return failed(read.error);
      const manifest = read.manifest;
      const bundles = ask.bundles.map((name) => manifest.bundles.find((b) => b.name === name));
      const missing = ask.bundles.filter((_, i) => bundles[i] === undefined);
      if (missing.length > 0) return failed(`the manifest has no bundle ${missing.join(", ")}`);
      const wrong = bundles.filter((b) => b !== undefined && b.language !== ask.language);
      if (wrong.length > 0) return failed(`the bundle ${wrong[0]?.name} is not ${ask.language}`);
      say(`${this.module}: ${manifest.module}, bundle(s) ${ask.bundles.join(", ")}`);
      const result = await this.#build({
        root: join(work, "source"),
        outRoot: join(work, "out"),
        manifest,
        bundles: bundles.filter((b) => b !== undefined),
        origin: undefined,
        say,
        signal,
      });
      if (!result.ok) return failed(result.error);
      const built = new Map<string, BuiltFiles>(result.bundles.map((b) => [b.bundle, b]));
      const only = { ...manifest, bundles: manifest.bundles.filter((b) => built.has(b.name)) };
      const archives = packBundles(only, built, say);
      for (const archive of archives) await artifacts.put(archive.bytes, { signal });
      return {
        ok: true,
        bundles: archives.map((a) => ({
          name: a.bundle,
          digest: a.digest,
          size: a.size,
          ...(a.run === undefined ? {} : { run: [...a.run] }),
        })),
        log: tail(log),
      };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * The language builder's work. Its throwing (a file it cannot read, its SDK missing from the
   * mesh's install) is the build failing, said in the build's record: thrown, the builder would
   * ask again and again while the build says only `building`.
   */
  async #build(input: LanguageBuildInput): Promise<LanguageBuild> {
    try {
      return await this.#builder.build(input);
    } catch (error) {
      if (input.signal?.aborted === true) throw error;
      return {
        ok: false,
        error: `${this.module} failed: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
  }
}

function tail(lines: readonly string[]): string {
  const text = lines.join("\n");
  return text.length <= LOG_TAIL_CHARS ? text : `…${text.slice(-LOG_TAIL_CHARS)}`;
}
