/**
 * What tests do with the bus that no daemon's helper does: make and destroy buckets as the
 * controller would, put raw bytes into a stream (a forged or broken record), and have JetStream
 * deliver a stream into a subject it should never reach (a forged delivery).
 *
 * ```ts
 * await createBucket(admin, stateBucket("counter", "counts"), { history: 1 });
 * await publishRaw(admin, logsSubject("n1", "hello"), "not json");
 * ```
 */
import type { MeshBus } from "../mesh-bus.js";
import { natsOf } from "../mesh-bus.js";
import { request } from "../services.js";

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

/**
 * Has JetStream deliver every message of `stream` under `filter` into `into`, in queue group "q"
 * (as services subscribe): what anyone who may create a consumer can do (docs/nats.md §1.4.3),
 * and what a receiver must reject. Asked on the create subject that names the filter, the one a
 * module's own grant allows on its own state; fails when the server refuses the consumer.
 */
export async function forgeDelivery(
  bus: MeshBus,
  input: { readonly stream: string; readonly filter: string; readonly into: string },
): Promise<void> {
  const { stream, filter, into } = input;
  const created = (await request(bus, `$JS.API.CONSUMER.CREATE.${stream}.forger.${filter}`, {
    stream_name: stream,
    config: {
      name: "forger",
      deliver_subject: into,
      deliver_group: "q",
      filter_subject: filter,
      ack_policy: "none",
      deliver_policy: "all",
    },
  })) as { error?: unknown };
  if (created.error !== undefined)
    throw new Error(`the forged consumer was refused: ${JSON.stringify(created.error)}`);
}
