/**
 * How a new build of a module reaches the fleet (issue 22): a rollout policy, written in a
 * module's manifest (`rollout:`) or by an operator (`mesh rollout set`), and the mesh's default.
 * Counts are a number of nodes or a percentage of the nodes the module is placed on; durations
 * are written `500ms`, `30s`, `5m` or `1h`.
 */
import { z } from "zod";

/** `3` (nodes) or `"25%"` (of the nodes the module is placed on). */
export const RolloutCount = z.union([
  z.number().int().nonnegative(),
  z.string().regex(/^(100|[1-9]?[0-9])%$/, {
    error: 'a count is a number of nodes (e.g. 2) or a percentage from 0% to 100% (e.g. "25%")',
  }),
]);
export type RolloutCount = z.infer<typeof RolloutCount>;

export const DURATION_PATTERN = /^([0-9]{1,9})(ms|s|m|h)$/;

/** `500ms`, `30s`, `5m`, `1h`. */
export const RolloutDuration = z.string().regex(DURATION_PATTERN, {
  error: 'a duration is a whole number and a unit: ms, s, m or h (e.g. "30s", "5m")',
});

/** The order nodes are reached in: by name, shuffled by the build, or by a presence fact. */
export const RolloutOrder = z.string().regex(/^(name|random|label=[a-zA-Z][a-zA-Z0-9]*)$/, {
  error:
    'order is "name", "random" or "label=<fact>" with a fact of the node\'s presence (e.g. "label=arch")',
});

export const RolloutPolicy = z
  .object({
    canary: RolloutCount.optional().describe(
      "Nodes given a new build first (default 1; 0 when batch is 100%)",
    ),
    batch: RolloutCount.optional().describe(
      'Nodes given it in each wave after the canary (default "25%"; "100%": every node at once)',
    ),
    "min-healthy": RolloutDuration.optional().describe(
      "How long every node of a wave runs it healthy before the next wave (default 30s)",
    ),
    "healthy-deadline": RolloutDuration.optional().describe(
      "How long a node given it may take to become healthy before the rollout halts (default 5m)",
    ),
    "max-failing": RolloutCount.optional().describe(
      "How many nodes may fail before the rollout halts and reverts (default 0)",
    ),
    "pause-after-canary": z
      .boolean()
      .optional()
      .describe("Wait for `mesh rollout resume` once the canary is proven"),
    order: RolloutOrder.optional().describe('"name" (default), "random" or "label=<fact>"'),
  })
  .strict();
export type RolloutPolicy = z.infer<typeof RolloutPolicy>;

/** A duration as written, in milliseconds. */
export function durationMs(text: string): number {
  const m = DURATION_PATTERN.exec(text);
  if (m === null) return Number.NaN;
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
  return Number(m[1]) * unit;
}
