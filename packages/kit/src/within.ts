/**
 * A wait with a deadline: what a promise resolves to, or `otherwise` once the time passed or the
 * signal aborted, whichever comes first. The timer and the abort listener go with the first
 * outcome, so a wait that ended early holds nothing (a supervisor waiting for an exit, a standby
 * for its ready message, the host for a runtime's status file).
 *
 * ```ts
 * const ready = await within(said, 30_000, false, { signal }); // false: not said in time, or stopped
 * ```
 */
import type { DelayOptions } from "./delay.js";

/**
 * Resolves to what `promise` resolves to when it does within `ms`, to `otherwise` when the time
 * passes first or the signal aborts (at once when it has); rejects when `promise` rejects first.
 * Like `delay`, a stop is an answer, never an error.
 */
export function within<T, O>(
  promise: PromiseLike<T>,
  ms: number,
  otherwise: O,
  options: DelayOptions = {},
): Promise<T | O> {
  const { signal } = options;
  if (signal?.aborted === true) {
    // What it would have rejected with later is nobody's concern now.
    promise.then(undefined, () => undefined);
    return Promise.resolve(otherwise);
  }
  return new Promise<T | O>((resolve) => {
    let done = false;
    const end = (): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      return true;
    };
    const onAbort = (): void => {
      if (end()) resolve(otherwise);
    };
    const timer = setTimeout(onAbort, Math.max(0, ms));
    if (options.ref === false) timer.unref();
    signal?.addEventListener("abort", onAbort, { once: true });
    // Its outcome, adopted as it is (a rejection too) when it comes first.
    const outcome = Promise.resolve(promise);
    const settle = (): void => {
      if (end()) resolve(outcome);
    };
    outcome.then(settle, settle);
  });
}
