/**
 * `mesh.tool-stats.<node>.<module>` (stream `mesh-tool-stats`, decision 0172): what a node's
 * runtime counted of one module's tool calls in one window. A window is filed only when something
 * was called in it, so a quiet module costs the stream nothing.
 */
import { z } from "zod";
import { ReplyCode } from "./errors.js";
import { NAME_PATTERN, TOOL_NAME_PATTERN } from "./names.js";
import { Instant } from "./values.js";

/** How often a runtime files what it counted (ms): the finest step a plot can show. */
export const TOOL_STATS_INTERVAL_MS = 5_000;

const Count = z.number().int().nonnegative();

/**
 * One tool's calls in a window. `errors` counts every call answered with an error code (the
 * handler threw, the input was refused, the deadline passed, the module was not loaded); `codes`
 * splits them by that code, so a caller's mistakes (INVALID_INPUT) read apart from the tool's own
 * failures (INTERNAL, TIMEOUT).
 */
export const ToolCounts = z
  .object({
    calls: Count,
    errors: Count,
    codes: z.partialRecord(z.enum(ReplyCode), Count),
  })
  .strict();
export type ToolCounts = z.infer<typeof ToolCounts>;

/** One module's counts on one node, from `from` (inclusive) to `to` (exclusive). */
export const ToolStats = z
  .object({
    v: z.literal(1),
    node: z.string().regex(NAME_PATTERN),
    module: z.string().regex(NAME_PATTERN),
    from: Instant,
    to: Instant,
    tools: z.record(z.string().regex(TOOL_NAME_PATTERN), ToolCounts),
  })
  .strict();
export type ToolStats = z.infer<typeof ToolStats>;
