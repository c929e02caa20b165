/**
 * The one retry loop: call `fn` until it succeeds, waiting between attempts by the kit's
 * `Backoff` (so retries of processes that failed together spread out), through `delay` (so a
 * stop ends the wait at once and leaves no listener behind). An error `isRetriable` refuses is
 * thrown at once; a stop while retrying rejects with `ABORTED`, its cause the last error.
 *
 * ```ts
 * const store = await retry(() => ArtifactStore.open(bus, { signal }), {
 *   policy: { initialMs: 500, maxMs: 10_000 },
 *   isRetriable: isTransient,
 *   signal,
 *   onRetry: ({ error, delayMs }) => log(`cannot open the store yet (${error.message}); again in ${delayMs} ms`),
 * });
 * ```
 */
import { ErrorCode, MeshError } from "@mesh/protocol";
import { Backoff, type BackoffPolicy } from "./backoff.js";
import { delay } from "./delay.js";

/** What a retry hears before each wait. */
export interface RetryAttempt {
  /** What the attempt threw. */
  readonly error: Error;
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** How long before the next one. */
  readonly delayMs: number;
}

export interface RetryOptions {
  /** The waits between attempts. */
  readonly policy: BackoffPolicy;
  /** Whether an error is worth another attempt; one that is not is thrown as it is. */
  readonly isRetriable: (error: unknown) => boolean;
  /** Stops retrying: the retry then rejects with `ABORTED`. */
  readonly signal?: AbortSignal;
  /** At most this many attempts, then the last error is thrown; no limit by default. */
  readonly maxAttempts?: number;
  /** Said before each wait (to log it). */
  readonly onRetry?: (attempt: RetryAttempt) => void;
  /** The backoff's random source (tests); `Math.random` by default. */
  readonly random?: () => number;
}

/** Calls `fn` (with the attempt's number, from 1) until it resolves; resolves to what it returned. */
export async function retry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const { signal } = options;
  const maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
  const backoff = new Backoff({
    ...options.policy,
    ...(options.random === undefined ? {} : { random: options.random }),
  });
  for (let attempt = 1; ; attempt += 1) {
    if (isAborted(signal)) throw stopped(undefined, attempt - 1);
    let failure: unknown;
    try {
      return await fn(attempt);
    } catch (error) {
      failure = error;
    }
    // The signal may have aborted during the attempt (a stop cut it short): not a failure to retry.
    if (isAborted(signal)) throw stopped(failure, attempt);
    if (!options.isRetriable(failure) || attempt >= maxAttempts) throw failure;
    const delayMs = backoff.next();
    options.onRetry?.({ error: asError(failure), attempt, delayMs });
    if (!(await delay(delayMs, signal === undefined ? {} : { signal }))) {
      throw stopped(failure, attempt);
    }
  }
}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function stopped(last: unknown, attempts: number): MeshError {
  const after =
    last === undefined
      ? "before its first attempt"
      : `after ${attempts} attempt(s), the last failing with: ${asError(last).message}`;
  return new MeshError(ErrorCode.ABORTED, `stopped while retrying, ${after}`, {
    ...(last === undefined ? {} : { cause: last }),
  });
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}
