/**
 * The value of `mesh-summary.fleet`: the fleet in numbers, as the assigner keeps it (decision
 * 0090).
 */
import { z } from "zod";
import { ALL_NODES, NAME_PATTERN } from "./names.js";
import { Difference, Instant } from "./values.js";

const Name = z.string().regex(NAME_PATTERN);
const NodeName = Name.refine((name) => name !== ALL_NODES, {
  error: '"all" is not a node name: it means every node in assignments and puts',
});

const Count = z.number().int().nonnegative();

/** Cells by the read model's state (core's `readFleet`): healthy, starting, not running. */
const CellCounts = { assigned: Count, healthy: Count, starting: Count, notRunning: Count };

/** One assigned (node, module) that is not running, with the read model's reason and fix. */
export const SummaryCell = z
  .object({
    node: NodeName,
    module: Name,
    state: z.enum(["healthy", "starting", "not-running"]),
    reason: z.string(),
    fix: z.string().optional(),
  })
  .strict();
export type SummaryCell = z.infer<typeof SummaryCell>;

/**
 * The fleet in numbers, kept by the assigner under `mesh-summary.fleet` (decision 0090): its
 * size grows with the modules and the `first` lists' bound, never with the nodes. Present and
 * gone, each cell's state and what needs attention are core's read model's, judged at `at`.
 */
export const Summary = z
  .object({
    /**
     * When it was computed: present and gone are judged against this. Written only when what it
     * says changed (decision 0120), so its age tells when the fleet last moved, not whether the
     * assigner runs.
     */
    at: Instant,
    nodes: z.object({ total: Count, present: Count, gone: Count, never: Count }).strict(),
    cells: z.object({ ...CellCounts, leaving: Count }).strict(),
    /** One line per assigned module, sorted by name. */
    modules: z.array(z.object({ module: Name, ...CellCounts }).strict()),
    attention: z
      .object({
        /** Assigned cells not running. */
        cells: Count,
        /** Nodes that need attention themselves: gone, or their composition refused. */
        nodes: Count,
        /** The first of those cells, by module then node. */
        first: z.array(SummaryCell),
      })
      .strict(),
    /** Wanted or running where nothing assigns it any more: the first, by module then node. */
    leaving: z
      .object({ first: z.array(z.object({ node: NodeName, module: Name }).strict()) })
      .strict(),
    differences: z
      .object({
        total: Count,
        /** The first by key (`<node>.<module>`). */
        first: z.array(z.object({ key: z.string(), difference: Difference }).strict()),
      })
      .strict(),
  })
  .strict();
export type Summary = z.infer<typeof Summary>;
