/**
 * One lifecycle for every daemon (host, controller, delivery's daemons, runtime, embedded
 * server): named states, one `run({ signal })`, a state setter that says each change in the log,
 * and a guard so a second `run()` joins the first instead of starting the daemon twice.
 *
 * ```ts
 * class Indexer implements Daemon {
 *   readonly #life = new DaemonLife({ log });
 *   get state(): Lifecycle { return this.#life.state; }
 *   run(options: RunOptions): Promise<void> {
 *     return this.#life.run(options, async (signal) => {
 *       await this.#load(signal);
 *       this.#life.set(Lifecycle.running);
 *       await this.#serve(signal); // returns once the signal aborts
 *     });
 *   }
 * }
 * ```
 */

/** Where a daemon stands. `failed` is final: it could not start, or could not go on. */
export const Lifecycle = {
  starting: "starting",
  running: "running",
  stopping: "stopping",
  stopped: "stopped",
  failed: "failed",
} as const;
export type Lifecycle = (typeof Lifecycle)[keyof typeof Lifecycle];

/** What every daemon's `run()` takes: it works until the signal aborts. */
export interface RunOptions {
  readonly signal: AbortSignal;
}

/** A daemon: `run()` resolves once stopped by its signal, and rejects (state failed) when it cannot go on. */
export interface Daemon {
  readonly state: Lifecycle;
  run(options: RunOptions): Promise<void>;
}

export interface DaemonLifeOptions {
  /** Put before each line said (`controller` says `controller: running -> stopping`); nothing when the log names the daemon already. */
  readonly name?: string;
  /** Where state changes are said; nowhere when omitted. */
  readonly log?: (line: string) => void;
  /** The state before `run()`; `starting` by default. */
  readonly initial?: Lifecycle;
}

/** A daemon's state, its logged setter and its run-once guard. */
export class DaemonLife {
  readonly #prefix: string;
  readonly #log: ((line: string) => void) | undefined;
  #state: Lifecycle;
  #running: Promise<void> | undefined;

  constructor(options: DaemonLifeOptions) {
    this.#prefix = options.name === undefined ? "" : `${options.name}: `;
    this.#log = options.log;
    this.#state = options.initial ?? Lifecycle.starting;
  }

  get state(): Lifecycle {
    return this.#state;
  }

  /** Whether `run()` was called (it may have ended since). */
  get started(): boolean {
    return this.#running !== undefined;
  }

  /** Resolves once the run has ended, however it ended (at once when it never began). */
  async finished(): Promise<void> {
    await this.#running?.catch(() => undefined);
  }

  /** Moves to `next` and says so. `failed` is final; setting the state it has is no change. */
  set(next: Lifecycle, why?: string): void {
    if (this.#state === next || this.#state === Lifecycle.failed) return;
    const from = this.#state;
    this.#state = next;
    this.#log?.(`${this.#prefix}${from} -> ${next}${why === undefined ? "" : ` (${why})`}`);
  }

  /**
   * Runs `body` once: a second call returns the first call's promise. While `body` runs, an abort
   * of the signal moves the state to `stopping`; when it resolves the state is `stopped`. When it
   * rejects before the signal aborted, the state is `failed` and the error is thrown; an error
   * after the abort is a stop, not a failure. `body` sets `running` when it is ready.
   */
  run(options: RunOptions, body: (signal: AbortSignal) => Promise<void>): Promise<void> {
    this.#running ??= this.#run(options.signal, body);
    return this.#running;
  }

  async #run(signal: AbortSignal, body: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const onAbort = (): void => {
      if (this.#state === Lifecycle.starting || this.#state === Lifecycle.running) {
        this.set(Lifecycle.stopping);
      }
    };
    if (this.#state === Lifecycle.stopped) this.set(Lifecycle.starting);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    try {
      await body(signal);
    } catch (error) {
      if (!signal.aborted) {
        this.set(Lifecycle.failed, (error as Error).message);
        throw error;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.set(Lifecycle.stopped);
    }
  }
}

/**
 * The base of a daemon whose whole work is one body: `state` and `run({ signal })` come from here;
 * the daemon writes `work(signal)`, sets `running` when it is ready, and returns once the signal
 * aborted.
 */
export abstract class DaemonBase implements Daemon {
  protected readonly life: DaemonLife;

  protected constructor(options: DaemonLifeOptions) {
    this.life = new DaemonLife(options);
  }

  get state(): Lifecycle {
    return this.life.state;
  }

  run(options: RunOptions): Promise<void> {
    return this.life.run(options, (signal) => this.work(signal));
  }

  protected abstract work(signal: AbortSignal): Promise<void>;
}

/** Resolves when the signal aborts (at once when it has). */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
