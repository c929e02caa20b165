/**
 * What a daemon reconciles next: a queue of keys (a node, a module, a candidate) in the shape of
 * client-go's rate-limited work queue. A key added while it waits is handed once (coalescing); a
 * key is never handed to two workers at once — added while a worker has it, it is handed again
 * once that worker says `done`, so no change is lost and none is worked twice in parallel. A key
 * whose work failed is added again after its own backoff (`requeue`), which `forget` resets once
 * the work succeeds; `requeueAfter` adds it after a time the worker chose (a bus that is away).
 * The queue shuts down when its signal aborts: `get` then hands `undefined`.
 *
 * ```ts
 * const queue = new WorkQueue<string>({ policy: { initialMs: 500, maxMs: 60_000 }, signal });
 * queue.add("n1");
 * for (let key; (key = await queue.get()) !== undefined; ) {
 *   try { await reconcile(key); queue.forget(key); }
 *   catch { queue.requeue(key); }
 *   finally { queue.done(key); }
 * }
 * ```
 */
import { Backoff, type BackoffPolicy } from "./backoff.js";

export interface WorkQueueOptions {
  /** The per-key backoff of `requeue`: a key's delay grows with its failures in a row. */
  readonly policy: BackoffPolicy;
  /** Shuts the queue down when it aborts. */
  readonly signal: AbortSignal;
  /** The backoffs' random source (tests); `Math.random` by default. */
  readonly random?: () => number;
  /**
   * Whether a key added later alone keeps the process alive; true by default. False for work
   * that may be dropped at exit because it is kept elsewhere (the controller's revocations).
   */
  readonly ref?: boolean;
}

export class WorkQueue<K> {
  readonly #policy: BackoffPolicy;
  readonly #random: (() => number) | undefined;
  readonly #signal: AbortSignal;
  readonly #ref: boolean;
  /** Keys waiting to be handed, in the order they were first added. */
  readonly #waiting = new Set<K>();
  /** Keys a worker has now. */
  readonly #working = new Set<K>();
  /** Keys added while a worker had them: handed again at `done`. */
  readonly #again = new Set<K>();
  readonly #backoffs = new Map<K, Backoff>();
  /** Keys added later, with when and the timer that adds them (the earliest one wins). */
  readonly #later = new Map<K, { readonly at: number; readonly timer: NodeJS.Timeout }>();
  readonly #getters: ((key: K | undefined) => void)[] = [];
  #shutDown = false;

  constructor(options: WorkQueueOptions) {
    this.#policy = options.policy;
    this.#random = options.random;
    this.#signal = options.signal;
    this.#ref = options.ref ?? true;
    if (options.signal.aborted) this.#stop();
    else options.signal.addEventListener("abort", this.#stop, { once: true });
  }

  /** Keys waiting to be handed (not those a worker has, nor those added later). */
  get length(): number {
    return this.#waiting.size;
  }

  /** Whether the queue was shut down (its signal aborted). */
  get shutDown(): boolean {
    return this.#shutDown;
  }

  /** Adds a key to be worked; nothing when it waits already, or once the queue is shut down. */
  add(key: K): void {
    if (this.#shutDown) return;
    if (this.#working.has(key)) {
      this.#again.add(key);
      return;
    }
    if (this.#waiting.has(key)) return;
    const getter = this.#getters.shift();
    if (getter !== undefined) {
      this.#working.add(key);
      getter(key);
    } else {
      this.#waiting.add(key);
    }
  }

  /** Adds a key after `ms`; an earlier add of it that is due sooner stands instead. */
  requeueAfter(key: K, ms: number): void {
    if (this.#shutDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const pending = this.#later.get(key);
    if (pending !== undefined) {
      if (pending.at <= at) return;
      clearTimeout(pending.timer);
    }
    // The kit's own timer: one per key at most, cleared at shutdown, so nothing outlives the queue.
    const timer = setTimeout(() => {
      this.#later.delete(key);
      this.add(key);
    }, ms);
    if (!this.#ref) timer.unref();
    this.#later.set(key, { at, timer });
  }

  /** Adds a key after its backoff (its work failed); returns the delay chosen. */
  requeue(key: K): number {
    const delayMs = this.#backoffOf(key).next();
    this.requeueAfter(key, delayMs);
    return delayMs;
  }

  /** The key's failures in a row since it was last forgotten. */
  failures(key: K): number {
    return this.#backoffs.get(key)?.failures ?? 0;
  }

  /** The key's work succeeded: its next `requeue` waits the first delay again. */
  forget(key: K): void {
    this.#backoffs.delete(key);
  }

  /**
   * The next key to work, once there is one; `undefined` once the queue is shut down. The key is
   * the caller's until it calls `done(key)`.
   */
  get(): Promise<K | undefined> {
    if (this.#shutDown) return Promise.resolve(undefined);
    const next = this.#take();
    if (next !== undefined) return Promise.resolve(next.key);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /**
   * Every key waiting now, at once, each the caller's until it calls `done` for it: a worker
   * that decides a burst of keys in one pass (the assigner) takes the burst with this after
   * `get` handed its first key. None when nothing waits or the queue is shut down.
   */
  takeWaiting(): K[] {
    const keys = [...this.#waiting];
    this.#waiting.clear();
    for (const key of keys) this.#working.add(key);
    return keys;
  }

  /** The worker is done with `key`: if it was added meanwhile, it waits to be handed again. */
  done(key: K): void {
    this.#working.delete(key);
    if (this.#again.delete(key)) this.add(key);
  }

  #take(): { key: K } | undefined {
    for (const key of this.#waiting) {
      this.#waiting.delete(key);
      this.#working.add(key);
      return { key };
    }
    return undefined;
  }

  #backoffOf(key: K): Backoff {
    let backoff = this.#backoffs.get(key);
    if (backoff === undefined) {
      backoff = new Backoff({
        ...this.#policy,
        ...(this.#random === undefined ? {} : { random: this.#random }),
      });
      this.#backoffs.set(key, backoff);
    }
    return backoff;
  }

  readonly #stop = (): void => {
    this.#shutDown = true;
    this.#signal.removeEventListener("abort", this.#stop);
    for (const { timer } of this.#later.values()) clearTimeout(timer);
    this.#later.clear();
    this.#waiting.clear();
    this.#again.clear();
    for (const getter of this.#getters.splice(0)) getter(undefined);
  };
}
