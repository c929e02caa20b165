/**
 * Waiting for a value on the bus instead of polling it: the first value put under a key (or a
 * pattern of keys) that passes `until`, from what stands or what comes, through a watch that is
 * stopped once it has it, within a deadline (stretched, as every test deadline is).
 *
 * ```ts
 * const built = await firstPut(builds, "hello.*", { until: (b) => b.status === "built", what: "a build" });
 * ```
 */
import type { KvBucket } from "../kv-bucket.js";
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
