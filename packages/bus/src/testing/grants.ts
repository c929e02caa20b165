/**
 * Grants for the bus's own tests, written out as subjects (the mesh's real grants are core's, which
 * the bus does not depend on): what a user publishes to use a bucket as KvBucket opens it, and a
 * module's grant made of such subjects and its own inbox.
 */
import { inboxPrefix, kvStreamName, type Permissions } from "@mesh/protocol";

/**
 * Read, watch, check and write one bucket opened with `{allow_direct: true}`, as KvBucket opens
 * it (docs/nats.md §1.2 (a) and (b)); with `plainGet`, also the message get a client that opens
 * it without direct gets (the stock client's default) reads a key with.
 */
export function kvBucketSubjects(bucket: string, { plainGet = false } = {}): string[] {
  const stream = kvStreamName(bucket);
  return [
    ...(plainGet ? [`$JS.API.STREAM.MSG.GET.${stream}`] : []),
    `$JS.API.DIRECT.GET.${stream}.$KV.${bucket}.>`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.*.$KV.${bucket}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.*`,
    `$JS.FC.${stream}.>`,
    `$JS.API.STREAM.INFO.${stream}`,
    `$KV.${bucket}.>`,
  ];
}

/** A module's grant: publishing to `publish`, and receiving on its own inbox (docs/nats.md §1.2 (b)). */
export function moduleGrant(node: string, module: string, publish: readonly string[]): Permissions {
  return {
    publish: { allow: [...publish] },
    subscribe: { allow: [`${inboxPrefix(node, module)}.>`] },
  };
}
