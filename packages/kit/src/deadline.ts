/**
 * The one deadline on an operation: `work` runs until its time is up or the caller's signal
 * aborts, whichever comes first. The result follows the work when it settles first; otherwise it
 * is rejected at once with what the deadline or the stop says (the work's late answer is
 * dropped), and the work's own signal aborts with that same error, so the work lets go of what it
 * holds (a socket, a listener). That signal is made only when the work reads it: a signal costs
 * microseconds, which a work on a hot path that holds nothing (a tool call) does not pay. Every
 * path clears the timer and removes the listener it added to the caller's signal.
 *
 * ```ts
 * const info = await withDeadline(
 *   ({ signal }) => readInfo(socket, { signal }),   // destroys the socket when `signal` aborts
 *   {
 *     ms: 5_000,
 *     signal,
 *     expired: () => new MeshError(ErrorCode.CONNECT_FAILED, "no answer within 5000 ms"),
 *   },
 * );
 * ```
 */
import { ErrorCode, MeshError } from "@mesh/protocol";

export interface DeadlineOptions {
  /** How long the work may take, in ms (a negative time is none). */
  readonly ms: number;
  /** What the result is rejected with when the time is up; made then, so it can say what waited. */
  readonly expired: () => Error;
  /** Ends the work early. */
  readonly signal?: AbortSignal;
  /** What the result is rejected with when `signal` aborts; `ABORTED` (its cause the signal's reason) by default. */
  readonly aborted?: () => Error;
  /** Whether the deadline alone keeps the process alive; true by default, as `setTimeout`'s does. */
  readonly ref?: boolean;
}

/** What the work is handed: its signal, made when read, aborted when the result is cut short. */
export interface DeadlineWork {
  readonly signal: AbortSignal;
}

/**
 * Resolves or rejects as `work` does when it settles within `options.ms`; rejects with
 * `expired()` when it does not, with `aborted()` when the signal aborts first (at once, without
 * starting the work, when it has aborted already).
 */
export function withDeadline<T>(
  work: (deadline: DeadlineWork) => Promise<T>,
  options: DeadlineOptions,
): Promise<T> {
  const { signal } = options;
  if (signal?.aborted === true) return Promise.reject(stopped(options, signal));
  const handed = new Handed();
  let over = false;
  let cutShort: (error: Error) => void = () => undefined;
  const cut = new Promise<never>((_, reject) => (cutShort = reject));
  // Rejected first, then the work is told: the caller's handlers are queued before anything
  // the work's clean-up settles.
  const end = (error: Error): void => {
    if (over) return;
    over = true;
    cutShort(error);
    handed.cut(error);
  };
  const onAbort = (): void => end(stopped(options, signal));
  const timer = setTimeout(() => end(options.expired()), Math.max(0, options.ms));
  if (options.ref === false) timer.unref();
  signal?.addEventListener("abort", onAbort, { once: true });
  // An async function: a work that throws at once rejects as one that rejects later does.
  const running = (async () => work(handed))();
  const settled = (): void => {
    over = true;
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  };
  // Before the race's own reaction: once the work settled, nothing aborts its signal.
  running.then(settled, settled);
  return Promise.race([running, cut]).finally(settled);
}

/** The work's signal, made when first read (a class: an object literal's getter costs ~10 µs a call). */
class Handed implements DeadlineWork {
  #inner: AbortController | undefined;
  /** Why the result was cut short, once it was. */
  #cutWith: Error | undefined;

  get signal(): AbortSignal {
    if (this.#inner === undefined) {
      this.#inner = new AbortController();
      // Read only after the cut: aborted already.
      if (this.#cutWith !== undefined) this.#inner.abort(this.#cutWith);
    }
    return this.#inner.signal;
  }

  cut(error: Error): void {
    this.#cutWith = error;
    this.#inner?.abort(error);
  }
}

function stopped(options: DeadlineOptions, signal: AbortSignal | undefined): Error {
  return (
    options.aborted?.() ??
    new MeshError(ErrorCode.ABORTED, "stopped before it finished", { cause: signal?.reason })
  );
}
