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
import { KvBucket, sha256, type MeshBus } from "@mesh/bus";
import { DaemonBase, Lifecycle, aborted } from "@mesh/kit";
import {
  Bucket,
  ErrorCode,
  MeshError,
  candidateKey,
  isMeshError,
  parseCandidateKey,
  type Candidate,
  type ModuleRegistration,
  type ModuleSource,
} from "@mesh/protocol";
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

export class Indexer extends DaemonBase {
  readonly #bus: MeshBus;
  readonly #log: (line: string) => void;
  readonly #options: IndexerOptions;
  readonly #latest = new Map<string, { seq: number; revision: string }>();
  readonly #sources = new Map<string, Followed>();
  readonly #chains = new Map<string, Promise<void>>();

  private constructor(options: IndexerOptions) {
    const log = options.log ?? (() => undefined);
    super({ log });
    this.#bus = options.bus;
    this.#options = options;
    this.#log = log;
  }

  static create(options: IndexerOptions): Promise<Indexer> {
    return Promise.resolve(new Indexer(options));
  }

  protected async work(signal: AbortSignal): Promise<void> {
    const candidates = await KvBucket.open(this.#bus, Bucket.candidates);
    const modules = await KvBucket.open(this.#bus, Bucket.modules);
    // The numbering as it stands, before anything is scanned.
    for await (const event of candidates.watch({ signal })) {
      if (event.type === "current") break;
      if (event.type === "put") this.#noteCandidate(event.key, event.value);
    }
    this.life.set(Lifecycle.running);
    this.#log("running: watching registered sources");
    const scan = (module: string): void => {
      const previous = this.#chains.get(module) ?? Promise.resolve();
      const next = previous
        .then(() => this.#scan(module, candidates, signal))
        .catch((error: unknown) => {
          if (!signal.aborted) this.#log(`${module}: ${(error as Error).message}`);
        });
      this.#chains.set(module, next);
    };
    const following = (async () => {
      for await (const event of modules.watch({ signal })) {
        if (event.type === "put") {
          this.#follow(event.key, event.value, () => scan(event.key));
          scan(event.key);
        } else if (event.type === "delete") this.#unfollow(event.key);
      }
    })();
    try {
      await Promise.race([following, aborted(signal)]);
      if (!signal.aborted)
        throw new MeshError(
          ErrorCode.BUCKET_UNAVAILABLE,
          `the watch of ${Bucket.modules} ended; start the indexer again`,
        );
    } finally {
      for (const module of [...this.#sources.keys()]) this.#unfollow(module);
      await Promise.allSettled(this.#chains.values());
    }
  }

  #noteCandidate(key: string, candidate: Candidate): void {
    const { module, seq } = parseCandidateKey(key);
    const latest = this.#latest.get(module);
    if (latest === undefined || seq > latest.seq)
      this.#latest.set(module, { seq, revision: candidate.revision });
  }

  async #scan(module: string, candidates: KvBucket<Candidate>, signal: AbortSignal): Promise<void> {
    const followed = this.#sources.get(module);
    if (followed === undefined) return;
    const { revision, sourceDigest } = await revisionOf(followed.source, { signal });
    for (;;) {
      const latest = this.#latest.get(module);
      if (latest?.revision === revision) return;
      const seq = (latest?.seq ?? 0) + 1;
      const candidate: Candidate = {
        module,
        seq,
        revision,
        sourceDigest,
        at: (this.#options.now ?? (() => new Date()))().toISOString(),
      };
      try {
        await candidates.create(candidateKey(module, seq), candidate, { signal });
        this.#latest.set(module, { seq, revision });
        this.#log(`${module}: candidate ${seq} at ${revision}`);
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

  #follow(module: string, registration: ModuleRegistration, changed: () => void): void {
    this.#unfollow(module);
    const source = registration.source;
    const entry: Followed = { source };
    this.#sources.set(module, entry);
    const path =
      source.kind === "directory"
        ? source.path
        : source.kind === "git"
          ? localPath(source.url)
          : undefined;
    if (path === undefined) return;
    const target = source.kind === "git" ? gitDirOf(path) : path;
    const debounce = this.#options.debounceMs ?? 300;
    const soon = (): void => {
      if (entry.timer !== undefined) clearTimeout(entry.timer);
      entry.timer = setTimeout(changed, debounce);
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
      const every = this.#options.pollMs ?? POLL_MS;
      this.#log(
        `${module}: ${target} can no longer be watched (${code ?? (error as Error).message}` +
          `${code === "ENOSPC" ? ": the system's limit of watches is reached" : ""}); ` +
          `it is digested every ${Math.round(every / 1000)} s instead`,
      );
      entry.poll = setInterval(changed, every);
    });
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
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    if (entry.poll !== undefined) clearInterval(entry.poll);
    this.#sources.delete(module);
  }
}

interface Followed {
  readonly source: ModuleSource;
  watcher?: FSWatcher | undefined;
  timer?: NodeJS.Timeout;
  /** When the source cannot be watched: the timer that digests it now and then. */
  poll?: NodeJS.Timeout;
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
