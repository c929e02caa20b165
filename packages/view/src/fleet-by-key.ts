/**
 * The fleet read by key (decision 0090), put together: the reads are the bus's
 * (`@mesh/bus`'s `fleet-reads.ts`), what they mean is core's (`fleet/by-key.ts`). What `mesh
 * status` and the view's first paint start from.
 */
import { listNodes, readModuleWide, readSummary, type MeshBus } from "@mesh/bus";
import { cellsByModule, type FleetShape } from "@mesh/core";

/**
 * The fleet's shape, read by key: the summary first (the module-wide reads start beside its get),
 * then, for a fleet of more than `above` cells, the node names and each module's cells. Else
 * `cells`, the summary's count (a fleet small enough to read whole), or `none` (no summary yet).
 */
export async function readShape(
  bus: MeshBus,
  options: { readonly above: number; readonly signal?: AbortSignal | undefined },
): Promise<FleetShape | { readonly cells: number } | "none"> {
  const { signal } = options;
  const reading = readModuleWide(bus, signal);
  reading.catch(() => undefined);
  const summary = await readSummary(bus, signal);
  if (summary === undefined) return "none";
  const cells = summary.cells.assigned + summary.cells.leaving;
  if (cells <= options.above) return { cells };
  const heard = summary.nodes.present + summary.nodes.gone;
  const [wide, present] = await Promise.all([reading, listNodes(bus, signal, heard)]);
  return { summary, wide, present, byModule: cellsByModule(wide, present, summary.leaving.first) };
}
