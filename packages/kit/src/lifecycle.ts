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

import { loggerFrom, type Logger } from "./logger.js";

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

/**
 * A daemon's state, its logged setter, its run-once guard, its own stop, and the background tasks
 * it owns: each started under the run's signal, each awaited before the run ends, and one that
 * fails before the stop fails the daemon (a task that dies unnoticed is a daemon half running).
 */
export class DaemonLife {
  /** Where the daemon says what it does: the log it was given, under its name. */
  readonly log: Logger;
  #state: Lifecycle;
  #running: Promise<void> | undefined;
  /** The run's own signal: the caller's, or `stop()`, or a task's failure aborts it. */
  #own: AbortController | undefined;
  readonly #tasks = new Set<Promise<void>>();
  #failure: { readonly error: unknown } | undefined;

  constructor(options: DaemonLifeOptions) {
    const log = loggerFrom(options.log ?? (() => undefined));
    this.log = options.name === undefined ? log : log.child(options.name);
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
    this.log(`${from} -> ${next}${why === undefined ? "" : ` (${why})`}`);
  }

  /**
   * Runs `body` once: a second call returns the first call's promise. While `body` runs, an abort
   * of the signal (or `stop()`) moves the state to `stopping`; when it resolves the state is
   * `stopped`. When it rejects before the signal aborted, or a task failed, the state is `failed`
   * and the error is thrown; an error after the abort is a stop, not a failure. `body` sets
   * `running` when it is ready.
   */
  run(options: RunOptions, body: (signal: AbortSignal) => Promise<void>): Promise<void> {
    this.#running ??= this.#run(options.signal, body);
    return this.#running;
  }

  /** Ends the run (as its signal would) and resolves once it has ended; harmless twice or before run. */
  async stop(): Promise<void> {
    this.#own?.abort();
    await this.finished();
  }

  /**
   * Starts `work` beside the body, under the run's signal; the run ends only once it has. A task
   * that rejects before the stop fails the daemon, named in the reason. Only while running.
   */
  task(name: string, work: (signal: AbortSignal) => Promise<void>): void {
    const own = this.#own;
    if (own === undefined || own.signal.aborted) return;
    const running: Promise<void> = work(own.signal)
      .catch((error: unknown) => {
        if (own.signal.aborted) return;
        this.#failure ??= {
          error: new Error(`${name}: ${(error as Error).message}`, { cause: error }),
        };
        own.abort();
      })
      .finally(() => this.#tasks.delete(running));
    this.#tasks.add(running);
  }

  async #run(signal: AbortSignal, body: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const own = new AbortController();
    this.#own = own;
    const onAbort = (): void => own.abort(signal.reason);
    const onStop = (): void => {
      if (this.#failure !== undefined) return; // a task failed: the state says failed, not stopping
      if (this.#state === Lifecycle.starting || this.#state === Lifecycle.running) {
        this.set(Lifecycle.stopping);
      }
    };
    if (this.#state === Lifecycle.stopped) this.set(Lifecycle.starting);
    own.signal.addEventListener("abort", onStop, { once: true });
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    let failure: { readonly error: unknown } | undefined;
    try {
      await body(own.signal);
    } catch (error) {
      if (!own.signal.aborted) failure = { error };
    } finally {
      signal.removeEventListener("abort", onAbort);
      own.signal.removeEventListener("abort", onStop);
      own.abort(); // the body is done: its tasks end with it
      await Promise.allSettled([...this.#tasks]);
      failure ??= this.#failure;
      if (failure !== undefined) this.set(Lifecycle.failed, (failure.error as Error).message);
      this.set(Lifecycle.stopped);
    }
    if (failure !== undefined) throw failure.error;
  }
}

/**
 * The base of a daemon whose whole work is one body: `state` and `run({ signal })` come from here;
 * the daemon writes `work(signal)`, sets `running` when it is ready, and returns once the signal
 * aborted.
 */
export abstract class DaemonBase implements Daemon, AsyncDisposable {
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

  /** Ends the run and resolves once it has ended. */
  stop(): Promise<void> {
    return this.life.stop();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.life.stop();
  }

  /** Where the daemon says what it does (its name before each line). */
  protected get log(): Logger {
    return this.life.log;
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
