/**
 * The indexer: writes a candidate when a registered module's source has a new revision. A folder
 * is digested at start, when it is registered, and when its watcher says something in it changed
 * (after a quiet moment, so a save of many files makes one candidate); a local git repository is
 * watched the same way for its refs; a remote git source is looked at on start and registration
 * only (no network polling). Candidates are numbered per module from 1; the numbering is read
 * back from the bucket, so a restart continues it and writes nothing when nothing changed.
 */
import { join, relative, sep } from "node:path";
import { watch as chokidarWatch, type FSWatcher } from "chokidar";
import { isDeepStrictEqual } from "node:util";
import {
  KvBucket,
  openedOnWatch,
  reconciler,
  sha256,
  type MeshBus,
  type Reconciled,
  type Reconciler,
} from "@mesh/bus";
import { delay } from "@mesh/kit";
import {
  Bucket,
  ErrorCode,
  MeshError,
  candidateKey,
  isMeshError,
  meshRef,
  parseCandidateKey,
  type Candidate,
  type ModuleRegistration,
  type ModuleSource,
} from "@mesh/protocol";
import { ReconciledDaemon } from "./reconciled-daemon.js";
import { directoryDigest, gitCommit, isDirectory, localPath } from "./source.js";

export interface IndexerOptions {
  readonly bus: MeshBus;
  readonly log?: (line: string) => void;
  /** How long a folder must be quiet after a change before it is digested again. */
  readonly debounceMs?: number;
  /** How often a source that cannot be watched (a watch limit reached) is digested instead. */
  readonly pollMs?: number;
  readonly now?: () => Date;
}

/** The revision of a source now, and the digest a candidate carries. */
export async function revisionOf(
  source: ModuleSource,
  options: { signal?: AbortSignal } = {},
): Promise<{ revision: string; sourceDigest: string }> {
  switch (source.kind) {
    case "directory": {
      if (!(await isDirectory(source.path))) {
        throw new MeshError(
          ErrorCode.SOURCE_UNAVAILABLE,
          `the folder ${JSON.stringify(source.path)} does not exist; register the module again with its folder`,
          { path: source.path },
        );
      }
      const digest = await directoryDigest(source.path, options);
      return { revision: digest, sourceDigest: digest };
    }
    case "git": {
      const commit = await gitCommit(source.url, source.ref, options);
      // The commit names the content; its digest is taken over url and commit so it is a SHA-256 like the others.
      return {
        revision: commit,
        sourceDigest: sha256(Buffer.from(`git\u0000${source.url}\u0000${commit}`)),
      };
    }
    case "archive":
      return { revision: source.digest, sourceDigest: source.digest };
  }
}

/**
 * What of the mesh the indexer reads and writes, as its manifest names it (seed 003: the manifest
 * test holds the two equal, and hears on a real bus that the code uses exactly these).
 */
export const INDEXER_USES = {
  reads: [meshRef(Bucket.modules)],
  writes: [meshRef(Bucket.candidates)],
} as const;

/** What the indexer watches: the registered modules, and the candidates for their numbering. */
const indexerSources = (bus: MeshBus) => ({
  modules: { bucket: openedOnWatch(bus, Bucket.modules) },
  candidates: { bucket: openedOnWatch(bus, Bucket.candidates) },
});
type IndexerSources = ReturnType<typeof indexerSources>;

/**
 * A reconciler keyed by module: a module is reconciled once the mirror stands, each time its
 * registration changes, once its folder has been quiet after a change (the watcher asks), and
 * every `pollMs` while its folder cannot be watched. Reconciling a module follows its source as
 * registered (a watcher on it, or none once unregistered) and writes a candidate when the source's
 * revision is not the module's latest candidate's.
 */
export class Indexer extends ReconciledDaemon<IndexerSources, string, IndexerOptions> {
  readonly #latest = new Map<string, { seq: number; revision: string }>();
  readonly #sources = new Map<string, Followed>();
  protected readonly reconciler: Reconciler<IndexerSources, string>;
  #candidates: Promise<KvBucket<Candidate>> | undefined;

  private constructor(options: IndexerOptions) {
    super(options);
    this.reconciler = reconciler<IndexerSources, string>({
      sources: indexerSources(options.bus),
      // A candidate concerns no module to reconcile (the indexer writes them): it moves the numbering.
      keysOf: (change) => {
        if (change.source === "modules") return [change.key];
        if (change.after !== undefined) this.#noteCandidate(change.key, change.after);
        return [];
      },
      allKeys: (mirror) => mirror.map("modules").keys(),
      onReady: (mirror) => {
        // The numbering as it stands, before anything is scanned.
        for (const [key, candidate] of mirror.map("candidates"))
          this.#noteCandidate(key, candidate);
        this.log("running: watching registered sources");
      },
      reconcile: (module, { mirror, signal }) =>
        this.#reconcile(module, mirror.map("modules").get(module), signal),
      retry: { initialMs: 1_000, maxMs: 60_000 },
      log: this.log,
    });
  }

  static create(options: IndexerOptions): Promise<Indexer> {
    return Promise.resolve(new Indexer(options));
  }

  protected afterRun(): void {
    for (const module of [...this.#sources.keys()]) this.#unfollow(module);
  }

  async #reconcile(
    module: string,
    registration: ModuleRegistration | undefined,
    signal: AbortSignal,
  ): Promise<Reconciled | void> {
    if (registration === undefined) return this.#unfollow(module);
    let followed = this.#sources.get(module);
    if (followed === undefined || !isDeepStrictEqual(followed.source, registration.source))
      followed = this.#follow(module, registration);
    try {
      await this.#scan(module, followed.source, signal);
    } catch (error) {
      // A folder that is not there: looked at again when it is registered again, not on a clock.
      if (!isMeshError(error, ErrorCode.SOURCE_UNAVAILABLE)) throw error;
      this.log(`${module}: ${error.message}`);
    }
    if (followed.polling) return { requeueAfterMs: this.options.pollMs ?? POLL_MS };
  }

  #noteCandidate(key: string, candidate: Candidate): void {
    const { module, seq } = parseCandidateKey(key);
    const latest = this.#latest.get(module);
    if (latest === undefined || seq > latest.seq)
      this.#latest.set(module, { seq, revision: candidate.revision });
  }

  async #scan(module: string, source: ModuleSource, signal: AbortSignal): Promise<void> {
    const { revision, sourceDigest } = await revisionOf(source, { signal });
    this.#candidates ??= KvBucket.open(this.bus, Bucket.candidates);
    const candidates = await this.#candidates.catch((error: unknown) => {
      this.#candidates = undefined;
      throw error;
    });
    for (;;) {
      const latest = this.#latest.get(module);
      if (latest?.revision === revision) return;
      const seq = (latest?.seq ?? 0) + 1;
      const candidate: Candidate = {
        module,
        seq,
        revision,
        sourceDigest,
        at: (this.options.now ?? (() => new Date()))().toISOString(),
      };
      try {
        await candidates.create(candidateKey(module, seq), candidate, { signal });
        this.#latest.set(module, { seq, revision });
        this.log(`${module}: candidate ${seq} at ${revision}`);
        return;
      } catch (error) {
        if (!isMeshError(error, ErrorCode.CONFLICT)) throw error;
        // Someone wrote that seq first (another indexer, or one before a restart): read it and go on.
        const there = await candidates.get(candidateKey(module, seq), { signal });
        if (there !== undefined) this.#noteCandidate(there.key, there.value);
        else this.#latest.set(module, { seq, revision: "" });
      }
    }
  }

  /** Follows a module's source as registered: its watcher asks for the module after a quiet moment. */
  #follow(module: string, registration: ModuleRegistration): Followed {
    this.#unfollow(module);
    const source = registration.source;
    const entry: Followed = { source, polling: false };
    this.#sources.set(module, entry);
    const path =
      source.kind === "directory"
        ? source.path
        : source.kind === "git"
          ? localPath(source.url)
          : undefined;
    if (path === undefined) return entry;
    const target = source.kind === "git" ? gitDirOf(path) : path;
    const debounce = this.options.debounceMs ?? 300;
    const soon = (): void => {
      entry.quiet?.abort();
      const quiet = new AbortController();
      entry.quiet = quiet;
      void delay(debounce, { signal: quiet.signal }).then(
        (quietLongEnough) => quietLongEnough && this.reconciler.enqueue(module),
      );
    };
    // chokidar, not fs.watch: Node's recursive watch on Linux lost edits under src/ after a few
    // builds, and misses folders made later and files renamed over (what editors do).
    const watcher = watchFolder(target, source.kind === "git" ? gitRefsOnly(target) : ignoredIn);
    entry.watcher = watcher;
    watcher.on("all", soon);
    // The watcher sees changes only once its first scan is done: one look then catches what
    // changed between the registration's digest and that moment (a commit made at once).
    watcher.once("ready", soon);
    watcher.on("error", (error) => {
      const code = (error as NodeJS.ErrnoException).code;
      if (entry.watcher !== watcher) return;
      void watcher.close();
      entry.watcher = undefined;
      const every = this.options.pollMs ?? POLL_MS;
      this.log(
        `${module}: ${target} can no longer be watched (${code ?? (error as Error).message}` +
          `${code === "ENOSPC" ? ": the system's limit of watches is reached" : ""}); ` +
          `it is digested every ${Math.round(every / 1000)} s instead`,
      );
      entry.polling = true;
      this.reconciler.enqueue(module, every);
    });
    return entry;
  }

  /**
   * The watcher of a module's source, for tests that must see what it does when the system
   * refuses to watch more (a limit no test should reach on a shared machine).
   */
  watcherOf(module: string): FSWatcher | undefined {
    return this.#sources.get(module)?.watcher;
  }

  #unfollow(module: string): void {
    const entry = this.#sources.get(module);
    if (entry === undefined) return;
    void entry.watcher?.close();
    entry.quiet?.abort();
    this.#sources.delete(module);
  }
}

interface Followed {
  readonly source: ModuleSource;
  watcher?: FSWatcher | undefined;
  /** Aborted by the next change: the wait for the folder to be quiet after this one. */
  quiet?: AbortController;
  /** The source cannot be watched: it is digested every `pollMs` instead. */
  polling: boolean;
}

/** How often a source that cannot be watched is digested, by default. */
const POLL_MS = 10_000;

function watchFolder(target: string, ignored: (path: string) => boolean): FSWatcher {
  return chokidarWatch(target, { ignoreInitial: true, persistent: false, ignored });
}

/** What a folder's digest leaves out is not watched either (each watch costs a system handle). */
function ignoredIn(path: string): boolean {
  return /(^|[\\/])(node_modules|\.git)([\\/]|$)/.test(path);
}

/** In a git repository only the refs move a branch; object writes are noise. */
function gitRefsOnly(gitDir: string): (path: string) => boolean {
  return (path) => {
    const inside = relative(gitDir, path);
    if (inside === "" || inside === "refs" || inside.startsWith(`refs${sep}`)) return false;
    return inside !== "packed-refs" && inside !== "HEAD";
  };
}

/** Where a local repository keeps its refs: `.git` of a working tree, or the bare repository itself. */
function gitDirOf(path: string): string {
  return path.endsWith(".git") ? path : join(path, ".git");
}
