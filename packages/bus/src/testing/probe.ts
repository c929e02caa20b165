/**
 * Asking the server whether a credential may subscribe to a subject, for tests of grants: the
 * server answers a subscription it does not allow with `-ERR 'Permissions Violation'`, which
 * comes before the PONG of the flush that follows, so after the flush the answer is known.
 */
import type { MeshBus } from "../mesh-bus.js";
import { natsOf } from "../mesh-bus.js";

export async function maySubscribe(bus: MeshBus, subject: string): Promise<boolean> {
  const sub = natsOf(bus).nc.subscribe(subject);
  let denied = false;
  const watching = (async () => {
    try {
      for await (const _ of sub) {
        // Messages are not the question here.
      }
    } catch {
      denied = true;
    }
  })();
  await natsOf(bus).nc.flush();
  // A round trip more: the client closes the subscription when it reads the -ERR.
  await natsOf(bus).nc.flush();
  if (!sub.isClosed()) sub.unsubscribe();
  await watching;
  return !denied;
}
