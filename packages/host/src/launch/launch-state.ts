/**
 * What a host launcher keeps between its runs (decision 0200), in `<root>/host/launch.json`: the
 * build it hands the node to when it starts (the last one that took the node over and was healthy),
 * the one before it, and the builds that did not take the node over. Written atomically.
 */
import { readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "@mesh/kit";
import { FailedBuild } from "./wire.js";

/** A host build unpacked under the root: its digest, and the file Node runs in it. */
export const ArchiveBuild = z.object({
  digest: z.string().min(1),
  entry: z.string().min(1),
  /** The mesh version it said it is, when it said one. */
  version: z.string().optional(),
});
export type ArchiveBuild = z.infer<typeof ArchiveBuild>;

/** A host build: the CLI's own (the launcher's package's), or one unpacked under the root. */
export type Build = { readonly kind: "own" } | ({ readonly kind: "archive" } & ArchiveBuild);

export const OWN: Build = { kind: "own" };

const StateFile = z.object({
  v: z.literal(1),
  /** The build the launcher starts; absent: the CLI's own. */
  current: ArchiveBuild.optional(),
  /** The build before it; absent: the CLI's own. */
  previous: ArchiveBuild.optional(),
  failed: z.array(FailedBuild.extend({ at: z.string() })),
});
type StateFile = z.infer<typeof StateFile>;

/** How many failed builds are remembered (the newest). */
const FAILED_KEPT = 20;

export const launchStatePath = (root: string): string => join(root, "host", "launch.json");

export class LaunchState {
  readonly #root: string;
  #state: StateFile;

  private constructor(root: string, state: StateFile) {
    this.#root = root;
    this.#state = state;
  }

  /** The state under `root`; a fresh one when there is none, or when it cannot be read (moved aside). */
  static async load(root: string, log: (line: string) => void): Promise<LaunchState> {
    const path = launchStatePath(root);
    const text = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (text === undefined) return new LaunchState(root, { v: 1, failed: [] });
    let parsed: ReturnType<typeof StateFile.safeParse> | undefined;
    try {
      parsed = StateFile.safeParse(JSON.parse(text));
    } catch {
      parsed = undefined;
    }
    if (parsed?.success === true) return new LaunchState(root, parsed.data);
    const aside = `${path}.refused-${Date.now()}`;
    await rename(path, aside);
    log(`${path} is not a launch state: kept at ${aside}; the CLI's own host build runs`);
    return new LaunchState(root, { v: 1, failed: [] });
  }

  get current(): Build {
    return buildOf(this.#state.current);
  }
  get previous(): Build {
    return buildOf(this.#state.previous);
  }
  get failed(): FailedBuild[] {
    return this.#state.failed.map(({ digest, reason }) => ({ digest, reason }));
  }

  /** `next` took the node over from `from`: it is what runs from now on. */
  async tookOver(next: Build, from: Build): Promise<void> {
    this.#state = {
      ...this.#state,
      current: archiveOf(next),
      previous: archiveOf(from),
      failed: this.#state.failed.filter((f) => f.digest !== digestOf(next)),
    };
    if (this.#state.current === undefined) delete this.#state.current;
    if (this.#state.previous === undefined) delete this.#state.previous;
    await this.#save();
  }

  /** `digest` did not take the node over. */
  async failedBuild(failed: FailedBuild): Promise<void> {
    const others = this.#state.failed.filter((f) => f.digest !== failed.digest);
    this.#state = {
      ...this.#state,
      failed: [...others, { ...failed, at: new Date().toISOString() }].slice(-FAILED_KEPT),
    };
    await this.#save();
  }

  /** The current build broke on start: the previous one runs again, and the current one failed. */
  async fellBack(reason: string): Promise<void> {
    const broken = this.#state.current;
    this.#state = { ...this.#state };
    if (this.#state.previous === undefined) delete this.#state.current;
    else this.#state.current = this.#state.previous;
    delete this.#state.previous;
    if (broken !== undefined) await this.failedBuild({ digest: broken.digest, reason });
    else await this.#save();
  }

  async forget(digest: string): Promise<void> {
    if (!this.#state.failed.some((f) => f.digest === digest)) return;
    this.#state = { ...this.#state, failed: this.#state.failed.filter((f) => f.digest !== digest) };
    await this.#save();
  }

  async #save(): Promise<void> {
    await writeFileAtomic(launchStatePath(this.#root), `${JSON.stringify(this.#state, null, 1)}\n`);
  }
}

const buildOf = (kept: ArchiveBuild | undefined): Build =>
  kept === undefined ? OWN : { kind: "archive", ...kept };

const archiveOf = (build: Build): ArchiveBuild | undefined =>
  build.kind === "own"
    ? undefined
    : {
        digest: build.digest,
        entry: build.entry,
        ...(build.version === undefined ? {} : { version: build.version }),
      };

/** A build's digest; undefined for the CLI's own. */
export const digestOf = (build: Build): string | undefined =>
  build.kind === "own" ? undefined : build.digest;
