/** Reading what a bucket holds as it stands, for verbs that show it and end. */
import { readStanding, type KvBucket } from "@mesh/bus";

/** Every value of a bucket (under a key pattern), as it stands. */
export function readAll<T>(
  bucket: KvBucket<T>,
  key?: string,
  signal?: AbortSignal,
): Promise<Map<string, T>> {
  return readStanding(bucket, { ...(key === undefined ? {} : { key }), signal });
}
