/**
 * The state buckets (`<module>_<state>`) of the modules a node wants. Only the controller may
 * create streams, so a module's states exist because its manifest declares them.
 */
import { stateBucket } from "@mesh/protocol";
import { ensureStateBucket, type MeshBus } from "@mesh/bus";
import type { NodeInputs } from "./fleet.js";

/** Creates each state bucket of the `wanted` nodes' modules not in `made` yet; adds it there. */
export async function ensureNodeStateBuckets(input: {
  readonly bus: MeshBus;
  readonly wanted: readonly NodeInputs[];
  readonly made: Set<string>;
  readonly log?: ((line: string) => void) | undefined;
  readonly signal: AbortSignal;
}): Promise<void> {
  const { bus, made, signal } = input;
  for (const { manifest } of input.wanted.flatMap((n) => [...n.wanted.values()])) {
    if (manifest?.ok !== true) continue;
    for (const state of manifest.manifest.states) {
      const bucket = stateBucket(manifest.manifest.module, state.name);
      if (made.has(bucket)) continue;
      if (await ensureStateBucket(bus, bucket, { signal })) {
        input.log?.(`controller: created the state bucket ${bucket}`);
      }
      made.add(bucket);
    }
  }
}
