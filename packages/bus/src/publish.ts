/**
 * Plain publishes: a message to a subject, with no answer expected. Used for notices
 * (`mesh.provision.<node>.changed`) and for process output (`mesh.logs.<node>.<module>`, which a
 * stream captures). A publish the credential is not granted is not thrown by the server; it
 * surfaces as an `error` event on `MeshBus.events()` (docs/nats.md §1.3).
 */
import { MeshError, ErrorCode } from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { throwIfAborted } from "./bus-errors.js";
import { natsOf } from "./mesh-bus.js";

export interface PublishOptions {
  readonly signal?: AbortSignal;
}

/**
 * Publishes `body` as JSON on `subject`. While the connection is down the client buffers the
 * message and sends it on reconnect; on a closed connection this throws CONNECT_FAILED.
 */
export function publish(
  bus: MeshBus,
  subject: string,
  body: unknown,
  options: PublishOptions = {},
): void {
  const doing = `publishing on ${subject}`;
  throwIfAborted(options.signal, doing);
  try {
    natsOf(bus).nc.publish(subject, JSON.stringify(body));
  } catch (error) {
    throw new MeshError(
      ErrorCode.CONNECT_FAILED,
      `${doing}: ${(error as Error).message}; the connection is closed — connect again`,
      { subject, cause: error },
    );
  }
}

/** Flushes what was published to the server: resolves once the server has seen it all. */
export async function flush(bus: MeshBus): Promise<void> {
  await natsOf(bus).nc.flush();
}
