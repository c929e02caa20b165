/** Reading what a bucket holds as it stands, for verbs that show it and end. */
import type { KvBucket } from "@mesh/bus";

/** Every value of a bucket (under a key pattern), as it stands. */
export async function readAll<T>(
  bucket: KvBucket<T>,
  key?: string,
  signal?: AbortSignal,
): Promise<Map<string, T>> {
  const values = new Map<string, T>();
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    for await (const e of bucket.watch({
      signal: ac.signal,
      ...(key === undefined ? {} : { key }),
    })) {
      if (e.type === "current") break;
      if (e.type === "put") values.set(e.key, e.value);
      else values.delete(e.key);
    }
    // A read cut short by the caller's signal is a failure, not what stands.
    signal?.throwIfAborted();
  } finally {
    signal?.removeEventListener("abort", stop);
    ac.abort();
  }
  return values;
}
