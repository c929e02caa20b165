/**
 * The shape every daemon of the mesh is: a mirror of the buckets it reads (an informer) feeding a
 * work queue of the keys it decides (a node, a module, a candidate), and one `reconcile(key)`
 * that makes the world match what the mirror holds for that key. The reconciler owns the rest:
 * it reconciles every key once the mirror stands, then each key a change concerns; a key is
 * never reconciled twice at once, changes to it while it is coalesce into one more pass; a
 * `reconcile` that throws is retried after the key's own backoff, one that succeeds resets it,
 * and one that answers `{ requeueAfterMs }` is asked again after that time (a bus that is away,
 * a source to look at again). A required source lost for good fails the run (the daemon's
 * supervisor starts it again).
 *
 * A daemon whose decision is one pass over many keys at once (the assigner: one snapshot, one
 * `assign` over the nodes a burst touched) gives `reconcileBurst` instead of `reconcile`: it is
 * handed every key waiting when it starts (a change during it makes one more burst), and a
 * burst that throws requeues each of its keys on its own backoff.
 *
 * ```ts
 * const indexer = reconciler({
 *   name: "indexer",
 *   sources: { modules: { bucket: modules } },
 *   keysOf: (change) => [change.key],
 *   allKeys: (mirror) => mirror.map("modules").keys(),
 *   reconcile: async (module, { mirror, signal }) => scan(mirror.map("modules").get(module), signal),
 *   retry: { initialMs: 1_000, maxMs: 60_000 },
 * });
 * await indexer.run({ signal });
 * ```
 */
import {
  DaemonLife,
  Lifecycle,
  WorkQueue,
  aborted,
  delay,
  loggerFrom,
  type BackoffPolicy,
  type Daemon,
  type Logger,
  type RunOptions,
} from "@mesh/kit";
import { Mirror, type MirrorOptions, type SourceChange, type Sources } from "./mirror.js";

/** What `reconcile` may answer: nothing (done), or when to be asked again about the key. */
export interface Reconciled {
  /** Reconcile the key again after this long, though nothing changed (0: at once). */
  readonly requeueAfterMs?: number;
}

/** What `reconcile` works with. */
export interface ReconcileContext<S extends Sources> {
  readonly mirror: Mirror<S>;
  /** Aborted when the reconciler stops. */
  readonly signal: AbortSignal;
  /** The key's failures in a row before this pass (0 after a success). */
  readonly failures: number;
  readonly log: Logger;
}

/** What `reconcileBurst` works with: `more()` takes the keys that came since it was handed its own. */
export interface ReconcileBurstContext<S extends Sources, K> extends ReconcileContext<S> {
  /** Takes every key waiting now into this burst (after a source was opened again, say). */
  readonly more: () => K[];
}

interface ReconcilerBase<S extends Sources, K> extends Omit<
  MirrorOptions<S>,
  "touched" | "onChange" | "log"
> {
  /** How the reconciler is named in its log (`assigner`). */
  readonly name?: string;
  /** The keys a change concerns; none when it concerns no key. Asked once the mirror stands. */
  readonly keysOf: (change: SourceChange<S>, mirror: Mirror<S>) => Iterable<K>;
  /** Told every change, also before the mirror stands (an index kept beside the mirror). */
  readonly onChange?: (change: SourceChange<S>, mirror: Mirror<S>) => void;
  /** Every key there is to decide (reconciled once the mirror stands); none by default. */
  readonly allKeys?: (mirror: Mirror<S>) => Iterable<K>;
  /**
   * Told once the mirror stands, before any key is reconciled, and awaited (what it reads first;
   * background work it starts under `signal`): the daemon says it runs once this returns.
   */
  readonly onReady?: (
    mirror: Mirror<S>,
    context: { readonly signal: AbortSignal },
  ) => Promise<void> | void;
  /** The per-key backoff of a `reconcile` that threw. */
  readonly retry: BackoffPolicy;
  /** How many keys are reconciled at once; 1 by default (a burst reconciler: always 1). */
  readonly workers?: number;
  /** Told a key reconciled, when it failed, with the error (tests, metrics). */
  readonly onReconciled?: (key: K, error: unknown) => void;
  /**
   * A burst that throws fails the run instead of being retried (the controller: a pass the bus
   * refused leaves the users list half staged, and a fresh start reads it again).
   */
  readonly failOnError?: boolean;
  /** What a mirror that failed (before or after it stood) fails the run with; itself by default. */
  readonly failure?: (error: unknown) => Error;
  readonly log?: (line: string) => void;
}

/** Makes the world match what the mirror holds for `key`; throws to be retried. */
export type Reconcile<S extends Sources, K> = (
  key: K,
  context: ReconcileContext<S>,
) => Promise<Reconciled | void> | Reconciled | void;

/** Makes the world match what the mirror holds for every key of a burst; throws to be retried. */
type ReconcileBurst<S extends Sources, K> = (
  keys: K[],
  context: ReconcileBurstContext<S, K>,
) => Promise<void> | void;

export type ReconcilerOptions<S extends Sources, K> = ReconcilerBase<S, K> &
  (
    | { readonly reconcile: Reconcile<S, K>; readonly reconcileBurst?: never }
    | { readonly reconcileBurst: ReconcileBurst<S, K>; readonly reconcile?: never }
  );

/** A reconciler as a daemon: `run({ signal })` until stopped; `enqueue` asks for a key from outside. */
export interface Reconciler<S extends Sources, K> extends Daemon, AsyncDisposable {
  /** The mirror, once running (undefined before). */
  readonly mirror: Mirror<S> | undefined;
  /** Reconcile `key` (again), as a change would; after `ms` when given. */
  enqueue(key: K, ms?: number): void;
  stop(): Promise<void>;
}

export function reconciler<S extends Sources, K>(
  options: ReconcilerOptions<S, K>,
): Reconciler<S, K> {
  return new ReconcilerDaemon(options);
}

class ReconcilerDaemon<S extends Sources, K> implements Reconciler<S, K> {
  readonly #o: ReconcilerOptions<S, K>;
  readonly #life: DaemonLife;
  #mirror: Mirror<S> | undefined;
  #queue: WorkQueue<K> | undefined;

  constructor(options: ReconcilerOptions<S, K>) {
    this.#o = options;
    this.#life = new DaemonLife({
      ...(options.name === undefined ? {} : { name: options.name }),
      log: loggerFrom(options.log ?? (() => undefined)),
    });
  }

  get state(): Lifecycle {
    return this.#life.state;
  }

  get mirror(): Mirror<S> | undefined {
    return this.#mirror;
  }

  enqueue(key: K, ms = 0): void {
    this.#queue?.requeueAfter(key, ms);
  }

  stop(): Promise<void> {
    return this.#life.stop();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#life.stop();
  }

  run(options: RunOptions): Promise<void> {
    return this.#life.run(options, (signal) => this.#work(signal));
  }

  async #work(signal: AbortSignal): Promise<void> {
    const {
      keysOf,
      onChange,
      allKeys,
      reconcile,
      reconcileBurst,
      retry,
      workers,
      onReconciled,
      onReady,
      failure,
      failOnError: _failOnError,
      name: _name,
      ...mirrorOptions
    } = this.#o;
    const log = this.#life.log;
    const queue = new WorkQueue<K>({ policy: retry, signal });
    this.#queue = queue;
    await using mirror = Mirror.start<S>({
      ...mirrorOptions,
      log,
      onChange: (change) => {
        onChange?.(change, mirror);
        // Before the mirror stands, nothing is queued: every key is reconciled once it does.
        if (this.#mirror?.isReady === true)
          for (const key of keysOf(change, mirror)) queue.add(key);
      },
    });
    this.#mirror = mirror;
    const failing = (error: unknown): Promise<never> =>
      Promise.reject(failure === undefined ? (error as Error) : failure(error));
    const failed = mirror.failed.catch(failing);
    failed.catch(() => undefined);
    // A stop before the mirror stands ends the run at once, not once a source gives up.
    await Promise.race([mirror.ready.catch(failing), failed, aborted(signal)]);
    if (signal.aborted) return;
    await onReady?.(mirror, { signal });
    if (signal.aborted) return;
    for (const key of allKeys?.(mirror) ?? []) queue.add(key);
    this.#life.set(Lifecycle.running);
    const working =
      reconcileBurst !== undefined
        ? [this.#burstWorker(queue, mirror, signal, reconcileBurst)]
        : Array.from({ length: Math.max(1, workers ?? 1) }, () =>
            this.#worker(queue, mirror, signal, reconcile, onReconciled),
          );
    // A mirror that fails ends the run with its error; a stop ends the workers with the queue.
    await Promise.race([Promise.all(working), failed]);
  }

  /** Hands every key waiting to one `reconcileBurst` at a time. */
  async #burstWorker(
    queue: WorkQueue<K>,
    mirror: Mirror<S>,
    signal: AbortSignal,
    reconcileBurst: ReconcileBurst<S, K>,
  ): Promise<void> {
    const log = this.#life.log;
    const { onReconciled } = this.#o;
    for (let first = await queue.get(); first !== undefined; first = await queue.get()) {
      // A burst is what comes within one turn of the event loop, as the mirror's own gathering.
      if (!(await delay(0, { signal }))) {
        queue.done(first);
        break;
      }
      const keys = [first, ...queue.takeWaiting()];
      const more = (): K[] => {
        const taken = queue.takeWaiting();
        keys.push(...taken);
        return taken;
      };
      const failures = Math.max(...keys.map((key) => queue.failures(key)));
      try {
        await reconcileBurst(keys, { mirror, signal, failures, log, more });
        for (const key of keys) queue.forget(key);
        for (const key of keys) onReconciled?.(key, undefined);
      } catch (error) {
        if (signal.aborted) break;
        if (this.#o.failOnError === true) throw error;
        const delays = keys.map((key) => queue.requeue(key));
        log(
          `${keys.length} key(s): ${(error as Error).message}; again in ${Math.min(...delays)} ms`,
        );
        for (const key of keys) onReconciled?.(key, error);
      } finally {
        for (const key of keys) queue.done(key);
      }
    }
  }

  async #worker(
    queue: WorkQueue<K>,
    mirror: Mirror<S>,
    signal: AbortSignal,
    reconcile: Reconcile<S, K> | undefined,
    onReconciled: ReconcilerOptions<S, K>["onReconciled"],
  ): Promise<void> {
    const log = this.#life.log;
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      const failures = queue.failures(key);
      try {
        const answer = await reconcile?.(key, { mirror, signal, failures, log });
        queue.forget(key);
        if (answer?.requeueAfterMs !== undefined) queue.requeueAfter(key, answer.requeueAfterMs);
        onReconciled?.(key, undefined);
      } catch (error) {
        if (signal.aborted) break;
        const delayMs = queue.requeue(key);
        log(`${String(key)}: ${(error as Error).message}; reconciled again in ${delayMs} ms`);
        onReconciled?.(key, error);
      } finally {
        queue.done(key);
      }
    }
  }
}
