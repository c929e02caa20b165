/** Reading what a bucket holds as it stands, for verbs that show it and end. */
import type { KvBucket } from "@mesh/bus";

/** Every value of a bucket (under a key pattern), as it stands. */
export async function readAll<T>(bucket: KvBucket<T>, key?: string): Promise<Map<string, T>> {
  const values = new Map<string, T>();
  const ac = new AbortController();
  try {
    for await (const e of bucket.watch({
      signal: ac.signal,
      ...(key === undefined ? {} : { key }),
    })) {
      if (e.type === "current") break;
      if (e.type === "put") values.set(e.key, e.value);
      else values.delete(e.key);
    }
  } finally {
    ac.abort();
  }
  return values;
}
