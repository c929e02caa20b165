/**
 * The indexer: writes a candidate when a registered module's source has a new revision. A folder
 * is digested at start, when it is registered, and when fs.watch says something in it changed
 * (after a quiet moment, so a save of many files makes one candidate); a local git repository is
 * watched the same way for its refs; a remote git source is looked at on start and registration
 * only (no network polling). Candidates are numbered per module from 1; the numbering is read
 * back from the bucket, so a restart continues it and writes nothing when nothing changed.
 */
import { watch as fsWatch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import { KvBucket, sha256, type MeshBus } from "@mesh/bus";
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
import { DaemonState, aborted, type Daemon } from "./daemon.js";
import { directoryDigest, gitCommit, isDirectory, localPath } from "./source.js";

export interface IndexerOptions {
  readonly bus: MeshBus;
  readonly log?: (line: string) => void;
  /** How long a folder must be quiet after a change before it is digested again. */
  readonly debounceMs?: number;
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

export class Indexer implements Daemon {
  #state: DaemonState = DaemonState.starting;
  readonly #bus: MeshBus;
  readonly #log: (line: string) => void;
  readonly #options: IndexerOptions;
  readonly #latest = new Map<string, { seq: number; revision: string }>();
  readonly #sources = new Map<
    string,
    { source: ModuleSource; watcher?: FSWatcher; timer?: NodeJS.Timeout }
  >();
  readonly #chains = new Map<string, Promise<void>>();

  private constructor(options: IndexerOptions) {
    this.#bus = options.bus;
    this.#options = options;
    this.#log = options.log ?? (() => undefined);
  }

  static create(options: IndexerOptions): Promise<Indexer> {
    return Promise.resolve(new Indexer(options));
  }

  get state(): DaemonState {
    return this.#state;
  }

  async run(options: { signal: AbortSignal }): Promise<void> {
    const { signal } = options;
    const candidates = await KvBucket.open(this.#bus, Bucket.candidates);
    const modules = await KvBucket.open(this.#bus, Bucket.modules);
    // The numbering as it stands, before anything is scanned.
    for await (const event of candidates.watch({ signal })) {
      if (event.type === "current") break;
      if (event.type === "put") this.#noteCandidate(event.key, event.value);
    }
    this.#state = DaemonState.running;
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
    } catch (error) {
      if (!signal.aborted) {
        this.#state = DaemonState.failed;
        throw error;
      }
    } finally {
      if (this.#state !== DaemonState.failed) this.#state = DaemonState.stopping;
      for (const module of [...this.#sources.keys()]) this.#unfollow(module);
      await Promise.allSettled(this.#chains.values());
      if (this.#state !== DaemonState.failed) this.#state = DaemonState.stopped;
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
    const entry: { source: ModuleSource; watcher?: FSWatcher; timer?: NodeJS.Timeout } = { source };
    const path =
      source.kind === "directory"
        ? source.path
        : source.kind === "git"
          ? localPath(source.url)
          : undefined;
    if (path !== undefined) {
      const debounce = this.#options.debounceMs ?? 300;
      const onChange = (_event: string, file: string | Buffer | null): void => {
        const name = typeof file === "string" ? file : (file?.toString() ?? "");
        // In a git repository only the refs move a branch; object writes are noise.
        if (source.kind === "git" && name !== "" && !/(^|\/)(refs|packed-refs|HEAD)/.test(name))
          return;
        if (entry.timer !== undefined) clearTimeout(entry.timer);
        entry.timer = setTimeout(changed, debounce);
      };
      try {
        const target = source.kind === "git" ? gitDirOf(path) : path;
        entry.watcher = fsWatch(target, { recursive: true, persistent: false }, onChange);
        entry.watcher.on("error", (error) =>
          this.#log(
            `${module}: watching ${target} stopped (${error.message}); it is looked at again on its next registration or on restart`,
          ),
        );
      } catch (error) {
        this.#log(
          `${module}: ${path} cannot be watched (${(error as Error).message}); it is looked at on registration and restart only`,
        );
      }
    }
    this.#sources.set(module, entry);
  }

  #unfollow(module: string): void {
    const entry = this.#sources.get(module);
    if (entry === undefined) return;
    entry.watcher?.close();
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    this.#sources.delete(module);
  }
}

/** Where a local repository keeps its refs: `.git` of a working tree, or the bare repository itself. */
function gitDirOf(path: string): string {
  return path.endsWith(".git") ? path : join(path, ".git");
}
