/**
 * Waiting for a value on the bus instead of polling it: the first value put under a key (or a
 * pattern of keys) that passes `until`, from what stands or what comes, through a watch that is
 * stopped once it has it, within a deadline (stretched, as every test deadline is); and every
 * write under a key from now on, recorded as it comes.
 *
 * ```ts
 * const built = await firstPut(builds, "hello.*", { until: (b) => b.status === "built", what: "a build" });
 * ```
 */
import type { KvBucket, WatchEvent } from "../kv-bucket.js";
import { deadline } from "./harness.js";

export async function firstPut<T>(
  bucket: KvBucket<T>,
  key: string,
  options: {
    /** What is waited for, for the error. */
    readonly what: string;
    readonly until?: (value: T, revision: number) => boolean;
    /** The deadline in ms as it takes here; default 30 s. */
    readonly timeout?: number;
  },
): Promise<{ value: T; revision: number }> {
  const ac = new AbortController();
  try {
    return await deadline(
      (async () => {
        for await (const e of bucket.watch({ key, signal: ac.signal }))
          if (e.type === "put" && (options.until?.(e.value, e.revision) ?? true))
            return { value: e.value, revision: e.revision };
        throw new Error(`the watch of ${key} ended`);
      })(),
      options.timeout ?? 30_000,
      options.what,
    );
  } finally {
    ac.abort();
  }
}

/** What a watch hands after what stands: a write (or a value it could not read). */
type Written<T> = Exclude<WatchEvent<T>, { readonly type: "current" }>;

/**
 * Records every write under `key` from now on, as `say` words each (undefined: not recorded),
 * once the watch has handed what stands. Disposing of it stops the watch.
 */
export async function recordWrites<T>(
  bucket: KvBucket<T>,
  key: string,
  options: { readonly what: string; readonly say: (e: Written<T>) => string | undefined },
): Promise<{ readonly written: readonly string[] } & AsyncDisposable> {
  const ac = new AbortController();
  const written: string[] = [];
  let listening!: () => void;
  const heard = new Promise<void>((r) => (listening = r));
  const watching = (async () => {
    for await (const e of bucket.watch({ key, include: "updates", signal: ac.signal })) {
      if (e.type === "current") listening();
      else {
        const line = options.say(e);
        if (line !== undefined) written.push(line);
      }
    }
  })().catch(() => undefined);
  const stop = async (): Promise<void> => {
    ac.abort();
    await watching;
  };
  try {
    await deadline(heard, 60_000, options.what);
  } catch (error) {
    await stop();
    throw error;
  }
  return { written, [Symbol.asyncDispose]: stop };
}
