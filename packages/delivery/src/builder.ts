/**
 * The builder: builds each candidate once. A candidate's build id is derived from it
 * (`<seq>-<first 8 of its source digest>`), so a builder that restarts finds its own record and
 * builds again only what it left `building`. Archives go into the object store by digest before
 * the resolved manifest and the `built` record are written, so a record that says built always
 * names stored archives.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ArtifactStore,
  KvBucket,
  openedOnWatch,
  reconciler,
  type MeshBus,
  type Mirror,
  type Reconciler,
  type SourceChange,
} from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MESH_BUILD_ASKS,
  MeshError,
  ObjectStore,
  buildKey,
  candidateKey,
  digestKey,
  meshRef,
  type Build,
  type BuildModuleRegistration,
  type Candidate,
  type Manifest,
  type ModuleRegistration,
  type ModuleSource,
} from "@mesh/protocol";
import { buildWithModules } from "./build-asks.js";
import { BuildWaits } from "./build-waits.js";
import { ReconciledDaemon } from "./reconciled-daemon.js";
import { materialise } from "./source.js";

export interface BuilderOptions {
  readonly bus: MeshBus;
  readonly log?: (line: string) => void;
  /** Where sources are checked out while they build (a temporary folder by default). */
  readonly workDir?: string;
  readonly now?: () => Date;
}

/**
 * What of the mesh the builder reads and writes, as its manifest names it (seed 003: the manifest
 * test holds the two equal, and hears on a real bus that the code uses exactly these): the build
 * modules' asks too, which it sends each language's build module.
 */
export const BUILDER_USES = {
  reads: [meshRef(Bucket.buildModules), meshRef(Bucket.candidates), meshRef(Bucket.modules)],
  writes: [
    meshRef(ObjectStore.artifacts),
    MESH_BUILD_ASKS,
    meshRef(Bucket.builds),
    meshRef(Bucket.manifests),
  ],
} as const;

/** The build id of a candidate: its seq and the start of its source digest. */
export const buildIdOf = (candidate: Pick<Candidate, "seq" | "sourceDigest">): string =>
  `${candidate.seq}-${candidate.sourceDigest.slice(0, 8)}`;

/** What the builder watches: the candidates it builds, and what makes one worth building again. */
const builderSources = (bus: MeshBus) => ({
  candidates: { bucket: openedOnWatch(bus, Bucket.candidates) },
  modules: { bucket: openedOnWatch(bus, Bucket.modules) },
  buildModules: { bucket: openedOnWatch(bus, Bucket.buildModules) },
});
type BuilderSources = ReturnType<typeof builderSources>;

/**
 * A reconciler keyed by candidate (`<module>.<seq>`), one at a time: builds are CPU-bound, and
 * the order of candidates is kept. A candidate is reconciled once the mirror stands, when it is
 * written, when its module is registered (again), and when the build module it waits for starts;
 * a build that the bus interrupted (left `building`) is tried again on the key's backoff — a bus
 * error is never a failed build, and nothing else would ever finish it.
 */
export class Builder extends ReconciledDaemon<BuilderSources, string, BuilderOptions> {
  protected readonly reconciler: Reconciler<BuilderSources, string>;
  /** What a build reads and writes, opened by the first reconcile of a run. */
  #at: Promise<Buckets> | undefined;
  #waits: BuildWaits | undefined;

  private constructor(options: BuilderOptions) {
    super(options);
    this.reconciler = reconciler<BuilderSources, string>({
      sources: builderSources(options.bus),
      keysOf: (change, mirror) => (change.after === undefined ? [] : this.#keysOf(change, mirror)),
      allKeys: (mirror) => mirror.map("candidates").keys(),
      onReady: () => this.log("running: building every candidate without a finished build"),
      reconcile: async (key, { mirror, signal }) => {
        const candidate = mirror.map("candidates").get(key);
        if (candidate !== undefined) await this.#buildOne(candidate, await this.#open(signal));
      },
      retry: { initialMs: 1_000, maxMs: 60_000 },
      log: this.log,
    });
  }

  static create(options: BuilderOptions): Promise<Builder> {
    return Promise.resolve(new Builder(options));
  }

  protected afterRun(): void {
    this.#at = undefined;
    this.#waits = undefined;
  }

  /** The candidates a change concerns. */
  #keysOf(change: SourceChange<BuilderSources>, mirror: Mirror<BuilderSources>): string[] {
    switch (change.source) {
      case "candidates":
        return [change.key];
      case "modules":
        // A module registered (again) gets what it missed meanwhile: each candidate of it without
        // a finished build is built (one made while it was removed, say; its source did not
        // change, so the indexer makes no new one).
        return [...mirror.map("candidates").keys()].filter((key) =>
          key.startsWith(`${change.key}.`),
        );
      case "buildModules":
        // A build module that starts says so: what waited for it is built now, not after its backoff.
        return (this.#waits?.waitingFor(change.key) ?? []).map((c) =>
          candidateKey(c.module, c.seq),
        );
    }
  }

  /** The buckets and the store a build uses, opened once a run; opened again after a failure. */
  #open(signal: AbortSignal): Promise<Buckets> {
    this.#waits ??= new BuildWaits({ bus: this.bus, log: this.log, signal });
    const waits = this.#waits;
    this.#at ??= (async () => ({
      builds: await KvBucket.open(this.bus, Bucket.builds),
      manifests: await KvBucket.open(this.bus, Bucket.manifests),
      modules: await KvBucket.open(this.bus, Bucket.modules),
      buildModules: await KvBucket.open(this.bus, Bucket.buildModules),
      artifacts: await ArtifactStore.open(this.bus, { signal }),
      waits,
      signal,
    }))();
    return this.#at.catch((error: unknown) => {
      this.#at = undefined;
      throw error;
    });
  }

  /** Builds one candidate unless it was built (or failed) before; records how it went. */
  async #buildOne(candidate: Candidate, at: Buckets): Promise<void> {
    const { builds, signal } = at;
    const id = buildIdOf(candidate);
    const key = buildKey(candidate.module, id);
    const existing = await builds.get(key, { signal });
    // Built or failed: done once. Building: a builder that stopped half-way; build it again.
    if (existing !== undefined && existing.value.status !== "building") return;
    const registration = await at.modules.get(candidate.module, { signal });
    if (registration === undefined) {
      // Not a failure of its source: it is built once the module is registered again.
      this.log(`${candidate.module} candidate ${candidate.seq}: not registered, not built`);
      return;
    }
    const now = this.options.now ?? (() => new Date());
    const started = now();
    const base = {
      module: candidate.module,
      build: id,
      candidate: candidate.seq,
      timings: { started: started.toISOString() },
    };
    await builds.put(key, { ...base, status: "building", bundles: [], log: "" }, { signal });
    this.log(`building ${candidate.module} candidate ${candidate.seq} as ${id}`);
    const finish = async (record: Outcome): Promise<void> => {
      const finished = now();
      const build: Build = {
        ...base,
        ...record,
        timings: {
          ...base.timings,
          finished: finished.toISOString(),
          ms: finished.getTime() - started.getTime(),
        },
      };
      await builds.put(key, build, { signal });
      this.log(
        `${candidate.module} ${id}: ${build.status}${build.error === undefined ? "" : ` (${build.error})`}`,
      );
    };
    const work = await mkdtemp(
      join(this.options.workDir ?? tmpdir(), `mesh-builder-${candidate.module}-`),
    );
    try {
      await finish(await this.#build(candidate, id, registration.value.source, work, at));
    } catch (error) {
      // A build module that does not answer: the build waits (still `building`, saying for
      // whom), and the key's retry, or the build module's start, takes it up again.
      if (error instanceof MeshError && error.code === ErrorCode.BUILD_MODULE_UNAVAILABLE) {
        await at.waits.wait(candidate, error.key ?? "", error.message);
        await builds.put(
          key,
          { ...base, status: "building", bundles: [], log: `waiting: ${error.message}` },
          { signal },
        );
      }
      throw error;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Checks the source out into `work` and builds it; a built one's archives and resolved manifest
   * are stored before the outcome says built.
   */
  async #build(
    candidate: Candidate,
    build: string,
    source: ModuleSource,
    work: string,
    at: Buckets,
  ): Promise<Outcome> {
    const { signal } = at;
    try {
      await materialise(source, join(work, "src"), candidate.revision, { signal });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { status: "failed", bundles: [], error: message, log: `error: ${message}` };
    }
    const result = await buildWithModules({
      root: join(work, "src"),
      module: candidate.module,
      build,
      bus: this.bus,
      artifacts: at.artifacts,
      languages: await at.buildModules.keys(">", { signal }),
      waits: at.waits,
      signal,
    });
    if (!result.ok) return { status: "failed", bundles: [], error: result.error, log: result.log };
    await at.manifests.put(digestKey(result.manifestDigest), result.manifest, { signal });
    return {
      status: "built",
      manifestDigest: result.manifestDigest,
      bundles: result.archives.map((a) => ({ name: a.bundle, digest: a.digest, size: a.size })),
      log: result.log,
    };
  }
}

/** How a build ended, as its record says it (the record adds who, when and how long). */
type Outcome = Omit<Build, "timings" | "module" | "build" | "candidate">;

/** The buckets and the store one run of the builder reads and writes, and its signal. */
interface Buckets {
  readonly builds: KvBucket<Build>;
  readonly manifests: KvBucket<Manifest>;
  readonly modules: KvBucket<ModuleRegistration>;
  readonly buildModules: KvBucket<BuildModuleRegistration>;
  readonly artifacts: ArtifactStore;
  readonly waits: BuildWaits;
  readonly signal: AbortSignal;
}
