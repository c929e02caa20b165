/**
 * What the host has applied, on disk, so a host that restarts (after a crash, a kill -9, a
 * reboot) picks up where it was: which bundle is unpacked where, which need files it wrote,
 * which processes it started (pid and start time, so it can find them again and never signal a
 * stranger), and the last composition it received, so it can start what it ran without the bus.
 *
 * Written atomically after every step that changes the machine; read once at start.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Composed, ErrorCode, MeshError } from "@mesh/protocol";
import { writeFileAtomic } from "@mesh/bus";

/** A bundle unpacked at a path. */
export interface AppliedDelivery {
  readonly module: string;
  readonly digest: string;
}

/** A need file the host wrote. */
export interface AppliedNeed {
  readonly module: string;
  readonly path: string;
  readonly fingerprint: string;
}

/** A process the host started, and the fingerprint of everything it was started from. */
export interface AppliedProcess {
  readonly module: string;
  readonly name: string;
  /** Changes when the process must restart: its resource, a restart-on resource, its config. */
  readonly effective: string;
  /** Absent between deciding to start it and the spawn (a crash there leaves no pid). */
  readonly pid?: number;
  readonly startTime?: string;
}

export interface AppliedState {
  readonly version: 1;
  /** The last composition received from the bus. */
  composed?: Composed;
  /**
   * mesh-config as last seen, so a host that starts without the bus tells its processes the
   * same values (and does not restart the ones that restart on config for nothing).
   */
  config: Record<string, unknown>;
  /** By bundle path. */
  deliveries: Record<string, AppliedDelivery>;
  /** By resource id. */
  needs: Record<string, AppliedNeed>;
  /** By resource id. */
  processes: Record<string, AppliedProcess>;
}

/** The state's tables of what was applied, by key. */
type Table = "deliveries" | "needs" | "processes";

export const emptyState = (): AppliedState => ({
  version: 1,
  config: {},
  deliveries: {},
  needs: {},
  processes: {},
});

export const statePath = (root: string): string => join(root, "state", "applied.json");

/** The state under `root`, or an empty one on first start. */
export async function loadState(root: string): Promise<AppliedState> {
  const path = statePath(root);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return emptyState();
    throw error;
  }
  try {
    const raw = JSON.parse(text) as Partial<AppliedState>;
    if (raw.version !== 1) throw new Error(`version ${String(raw.version)}`);
    const composed = raw.composed === undefined ? undefined : Composed.parse(raw.composed);
    return {
      version: 1,
      ...(composed === undefined ? {} : { composed }),
      config: raw.config ?? {},
      deliveries: raw.deliveries ?? {},
      needs: raw.needs ?? {},
      processes: raw.processes ?? {},
    };
  } catch (error) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `the host's applied state ${JSON.stringify(path)} cannot be read (${(error as Error).message}); ` +
        `it is written atomically, so something else changed it — move it aside and start the host again: it re-applies its composition from the bus`,
      { path, cause: error },
    );
  }
}

export async function saveState(root: string, state: AppliedState): Promise<void> {
  await writeFileAtomic(statePath(root), `${JSON.stringify(state, null, 1)}\n`);
}

/**
 * The applied state and its named mutations: each one saves itself (atomically, in order), so no
 * caller can change the machine's record and forget to write it. `saved()` resolves once every
 * mutation asked for so far is on disk.
 */
export class AppliedStore {
  readonly #root: string;
  readonly #state: AppliedState;
  readonly #log: (line: string) => void;
  #saving: Promise<void> = Promise.resolve();

  private constructor(root: string, state: AppliedState, log: (line: string) => void) {
    this.#root = root;
    this.#state = state;
    this.#log = log;
  }

  /** The store of the state under `root` (an empty one on first start). */
  static async load(root: string, log: (line: string) => void): Promise<AppliedStore> {
    return new AppliedStore(root, await loadState(root), log);
  }

  get composed(): Composed | undefined {
    return this.#state.composed;
  }
  get config(): Readonly<Record<string, unknown>> {
    return this.#state.config;
  }
  get deliveries(): Readonly<Record<string, AppliedDelivery>> {
    return this.#state.deliveries;
  }
  get needs(): Readonly<Record<string, AppliedNeed>> {
    return this.#state.needs;
  }
  get processes(): Readonly<Record<string, AppliedProcess>> {
    return this.#state.processes;
  }
  /** What the planner compares against (read-only by convention). */
  get state(): AppliedState {
    return this.#state;
  }

  /** Resolves once everything asked for so far is written. */
  async saved(): Promise<void> {
    await this.#saving;
  }

  setComposed(composed: Composed): void {
    this.#state.composed = composed;
    this.#save();
  }

  /** One config key as mesh-config says it; undefined: deleted. */
  setConfig(key: string, value: unknown): void {
    if (value === undefined) delete this.#state.config[key];
    else this.#state.config[key] = value;
    this.#save();
  }

  /** Forgets the config keys not in `seen` (deleted while the host was away). */
  retainConfig(seen: ReadonlySet<string>, within: (key: string) => boolean = () => true): void {
    for (const key of Object.keys(this.#state.config))
      if (within(key) && !seen.has(key)) delete this.#state.config[key];
    this.#save();
  }

  /**
   * Keeps `entry` under `key` in one of the state's tables: a process about to be started
   * (recorded before the spawn), a need file written, a bundle unpacked.
   */
  record<T extends Table>(table: T, key: string, entry: AppliedState[T][string]): void {
    (this.#state[table] as Record<string, AppliedState[T][string]>)[key] = entry;
    this.#save();
  }

  /** The pid and start time of a recorded process that was spawned. */
  spawned(id: string, identity: { pid: number; startTime: string }): void {
    const record = this.#state.processes[id];
    if (record === undefined) return;
    this.#state.processes[id] = { ...record, pid: identity.pid, startTime: identity.startTime };
    this.#save();
  }

  /** Forgets `key` in one of the state's tables. */
  forget(table: Table, key: string): void {
    delete this.#state[table][key];
    this.#save();
  }

  forgetAllProcesses(): void {
    this.#state.processes = {};
    this.#save();
  }

  /** Writes what stands now (also when nothing changed: the first save after a recovery). */
  save(): void {
    this.#save();
  }

  #save(): void {
    const state = this.#state;
    this.#saving = this.#saving
      .then(() => saveState(this.#root, state))
      .catch((error: unknown) => this.#log(`cannot write the applied state: ${String(error)}`));
  }
}
