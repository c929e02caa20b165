/**
 * What tests do with the bus that no daemon's helper does: make and destroy buckets as the
 * controller would, and put raw bytes into a stream (a forged or broken record).
 *
 * ```ts
 * await createBucket(admin, stateBucket("counter", "counts"), { history: 1 });
 * await publishRaw(admin, logsSubject("n1", "hello"), "not json");
 * ```
 */
import type { MeshBus } from "../mesh-bus.js";
import { natsOf } from "../mesh-bus.js";

/** Makes a KV bucket (as the controller does; modules may not). */
export async function createBucket(
  admin: MeshBus,
  name: string,
  options: { readonly history?: number } = {},
): Promise<void> {
  await natsOf(admin).kvm.create(name, options.history === undefined ? {} : options);
}

/** Removes a KV bucket and everything in it; nothing happens when there is none. */
export async function destroyBucket(admin: MeshBus, name: string): Promise<void> {
  const kv = await natsOf(admin).kvm.open(name);
  await kv.destroy().catch(() => undefined);
}

/** Publishes `data` (bytes or text, unchecked) into the stream that stores `subject`. */
export async function publishRaw(
  admin: MeshBus,
  subject: string,
  data: string | Uint8Array,
): Promise<void> {
  await natsOf(admin).js.publish(subject, data);
}
