/**
 * One backoff for every restart and reconnect: the delay starts at `initialMs`, grows by
 * `multiplier` with each failure in a row up to `maxMs`, loses up to `jitter` of itself at random
 * (so processes that failed together do not come back together), and starts over after a run
 * that lasted `healthyMs`. Pure: the clock and the random source come in as options.
 *
 * ```ts
 * const backoff = new Backoff({ initialMs: 1_000, maxMs: 300_000, healthyMs: 30_000 });
 * backoff.started();                 // the process runs
 * setTimeout(restart, backoff.next()); // it exited: 1 s, 2 s, 4 s, … (minus jitter)
 * ```
 */
import { ErrorCode, MeshError } from "@mesh/protocol";

export interface BackoffOptions {
  /** The first delay. */
  readonly initialMs: number;
  /** No delay is longer. */
  readonly maxMs: number;
  /** How much each delay grows over the one before; default 2. */
  readonly multiplier?: number;
  /** The share of a delay that may be taken off at random, 0 to 0.5; default 0.2. */
  readonly jitter?: number;
  /** A run that lasted this long was healthy: the next delay is the first again. Never, by default. */
  readonly healthyMs?: number;
  /** The clock, in milliseconds; `Date.now` by default. */
  readonly now?: () => number;
  /** A number in [0, 1); `Math.random` by default. */
  readonly random?: () => number;
}

/** The shape of a backoff, without its clock and random source: what a daemon's options carry. */
export type BackoffPolicy = Pick<BackoffOptions, "initialMs" | "maxMs" | "multiplier" | "jitter">;

export const DEFAULT_MULTIPLIER = 2;
export const DEFAULT_JITTER = 0.2;

export class Backoff {
  readonly #o: Required<Omit<BackoffOptions, "healthyMs">> & { healthyMs: number };
  #failures = 0;
  #since: number | undefined;

  constructor(options: BackoffOptions) {
    this.#o = {
      multiplier: DEFAULT_MULTIPLIER,
      jitter: DEFAULT_JITTER,
      healthyMs: Number.POSITIVE_INFINITY,
      now: Date.now,
      random: Math.random,
      ...stripUndefined(options),
      initialMs: options.initialMs,
      maxMs: options.maxMs,
    };
    checkOptions(this.#o);
  }

  /** Failures in a row since the last reset. */
  get failures(): number {
    return this.#failures;
  }

  /** A run began (now, or `at`): if it lasts `healthyMs`, the delay after it is the first again. */
  started(at: number = this.#o.now()): void {
    this.#since = at;
  }

  /** A run ended without failing (a module put to sleep): nothing is counted, and it resets nothing. */
  ended(): void {
    this.#since = undefined;
  }

  /** A run failed (or an attempt did): the delay before the next one, counted as one more failure. */
  next(): number {
    if (this.#since !== undefined && this.#o.now() - this.#since >= this.#o.healthyMs) {
      this.#failures = 0;
    }
    this.#since = undefined;
    const delay = backoffDelay(this.#o, this.#failures, this.#o.random());
    this.#failures += 1;
    return delay;
  }

  /** Starts over: the next delay is the first. */
  reset(): void {
    this.#failures = 0;
    this.#since = undefined;
  }
}

/**
 * The delay after `failures` failures in a row (0 for the first), with `random` in [0, 1)
 * choosing how much jitter is taken off. Between `initialMs·(1−jitter)` and `maxMs`.
 */
export function backoffDelay(options: BackoffPolicy, failures: number, random: number): number {
  const multiplier = options.multiplier ?? DEFAULT_MULTIPLIER;
  const jitter = options.jitter ?? DEFAULT_JITTER;
  const base = Math.min(options.maxMs, options.initialMs * multiplier ** failures);
  return Math.round(base * (1 - jitter * random));
}

function checkOptions(o: Required<Omit<BackoffOptions, "now" | "random">>): void {
  const refuse = (field: string, value: number, rule: string): never => {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `the backoff's ${field} ${value} is out of range: it must be ${rule}`,
    );
  };
  if (!(o.initialMs > 0)) refuse("initialMs", o.initialMs, "above 0");
  if (!(o.maxMs >= o.initialMs)) refuse("maxMs", o.maxMs, `at least initialMs (${o.initialMs})`);
  if (!(o.multiplier >= 1)) refuse("multiplier", o.multiplier, "at least 1");
  // Up to 1 − 1/multiplier (0.5 when doubling) the delays still grow until the cap.
  if (!(o.jitter >= 0 && o.jitter <= 0.5)) refuse("jitter", o.jitter, "between 0 and 0.5");
  if (!(o.healthyMs > 0)) refuse("healthyMs", o.healthyMs, "above 0");
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
