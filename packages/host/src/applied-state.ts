/**
 * What the host has applied, on disk, so a host that restarts (after a crash, a kill -9, a
 * reboot) picks up where it was: which bundle is unpacked where, which need files it wrote,
 * which processes it started (pid and start time, so it can find them again and never signal a
 * stranger), and the last composition it received, so it can start what it ran without the bus.
 *
 * Written atomically after every step that changes the machine; read once at start.
 */
import { readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import {
  AppliedState as StateFile,
  issuesText,
  type AppliedDelivery,
  type AppliedNeed,
  type AppliedProcess,
  type AppliedState,
  type Composed,
} from "@mesh/protocol";
import { writeFileAtomic } from "@mesh/kit";

export type { AppliedDelivery, AppliedNeed, AppliedProcess, AppliedState };

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

/**
 * The state under `root`, or an empty one on first start. A file that does not parse (not JSON,
 * another version, a field of the wrong shape — a pid that is not a number) is never half
 * trusted: it is moved aside, said in the log, and the host starts clean. It then adopts none of
 * the processes the file names, ends those an earlier host of this root started (as it ends any
 * it has no record of), and applies its composition from the bus anew.
 */
export async function loadState(root: string, log: (line: string) => void): Promise<AppliedState> {
  const path = statePath(root);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return emptyState();
    throw error;
  }
  const read = parseState(text);
  if ("state" in read) return read.state;
  const aside = `${path}.refused-${new Date().toISOString().replace(/[:.]/g, "-")}`;
  await rename(path, aside);
  log(
    `the applied state ${JSON.stringify(path)} is refused (${read.refused}); it is kept at ${JSON.stringify(aside)}. ` +
      `The host starts clean: it adopts no process recorded there, ends those an earlier host started, and applies its composition from the bus again`,
  );
  return emptyState();
}

/** The saved state, or why the file cannot be read as one. */
function parseState(text: string): { state: AppliedState } | { refused: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { refused: `not JSON: ${(error as Error).message}` };
  }
  const parsed = StateFile.safeParse(raw);
  return parsed.success ? { state: parsed.data } : { refused: issuesText(parsed.error) };
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
    return new AppliedStore(root, await loadState(root, log), log);
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
