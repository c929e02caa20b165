/**
 * The keys changes have dirtied since they were last taken, and the wait for the next burst of
 * them. Pure apart from the timer that gathers a burst.
 */

/** Every key is dirty (a change whose reach the `touched` function cannot name key by key). */
export const ALL = Symbol("every key");
export type Touched = Iterable<string> | typeof ALL;

/** What changed since the dirty keys were last taken. */
export interface Dirty {
  /** Every key: decide everything again. */
  readonly all: boolean;
  readonly keys: ReadonlySet<string>;
}

export class DirtyKeys {
  #all = false;
  #keys = new Set<string>();
  #waiters: Array<() => void> = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #coalesceMs: number;

  /** `coalesceMs`: how long after a burst's first change the waiters are woken. */
  constructor(coalesceMs: number) {
    this.#coalesceMs = coalesceMs;
  }

  get isDirty(): boolean {
    return this.#all || this.#keys.size > 0;
  }

  add(touched: Touched): void {
    if (touched === ALL) this.#all = true;
    else for (const key of touched) this.#keys.add(key);
    if (this.isDirty) this.#schedule();
  }

  /** The dirty keys so far; none are dirty afterwards. */
  take(): Dirty {
    const dirty = { all: this.#all, keys: this.#keys };
    this.#all = false;
    this.#keys = new Set();
    return dirty;
  }

  /** Forgets what is dirty (the owner is about to decide everything anyway). */
  clear(): void {
    this.take();
  }

  /** Resolves once something is dirty and the burst it began is gathered (or the signal aborts). */
  changed(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal?.removeEventListener("abort", done);
        resolve();
      };
      signal?.addEventListener("abort", done, { once: true });
      this.#waiters.push(done);
      if (this.isDirty) this.#schedule();
    });
  }

  /** Wakes every waiter now (the mirror stopped or failed). */
  wakeAll(): void {
    this.#wake();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#waiters.length === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.isDirty) this.#wake();
    }, this.#coalesceMs);
  }

  #wake(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
