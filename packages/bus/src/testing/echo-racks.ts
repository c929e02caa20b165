/**
 * A tool served on many nodes, as a fleet serves it: `echo/say` (it says its input back) on
 * `rack-00`, `rack-01`, … each as its own service. What listings of many nodes are tested with.
 *
 * ```ts
 * const served = await serveEchoOnRacks(admin, 25);
 * try { … } finally { await Promise.all(served.map((s) => s.stop())); }
 * ```
 */
import { toolSubject } from "@mesh/protocol";
import type { MeshBus } from "../mesh-bus.js";
import { serve, type Served } from "../services.js";

export function serveEchoOnRacks(bus: MeshBus, count: number): Promise<Served[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      serve(bus, {
        name: "echo",
        version: "1.0.0",
        endpoints: [
          {
            name: "say",
            subject: toolSubject(`rack-${String(i).padStart(2, "0")}`, "echo", "say"),
            metadata: { description: "Says it back" },
            handler: (request) => Promise.resolve(request.json()),
          },
        ],
      }),
    ),
  );
}
