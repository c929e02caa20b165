/**
 * The one way daemon code waits: a timer that an abort signal cuts short. Every path out of it
 * (the time passed, the signal aborted, the signal had aborted already) removes what it added to
 * the signal, so a loop that waits on one long-lived signal a thousand times holds no more
 * listeners than one that waited once (issue 27: a host retrying against a bus without JetStream
 * added one abort listener per retry, and Node warned at the eleventh).
 *
 * ```ts
 * while (!signal.aborted) {
 *   await work();
 *   if (!(await delay(5_000, { signal }))) return; // stopped while waiting
 * }
 * ```
 */

export interface DelayOptions {
  /** Ends the wait early; the promise then resolves to false. */
  readonly signal?: AbortSignal;
  /** Whether the timer alone keeps the process alive; true by default, as `setTimeout`'s does. */
  readonly ref?: boolean;
}

/**
 * Resolves after `ms` milliseconds to true, or to false as soon as the signal aborts (at once
 * when it has). It never rejects: a stop is an answer for a daemon's loop, not an error.
 */
export function delay(ms: number, options: DelayOptions = {}): Promise<boolean> {
  const { signal } = options;
  if (signal?.aborted === true) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      },
      Math.max(0, ms),
    );
    if (options.ref === false) timer.unref();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
