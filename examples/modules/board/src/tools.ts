// board's tool reads another module's state: `counter/counts`, declared in `reads` and kept
// readable by counter, so the broker grants board read-only access to it (and nothing else).
import { defineModule, defineTool, z } from "@mesh/sdk";

const show = defineTool({
  name: "show",
  description: "Shows counter's running total.",
  input: z.object({}),
  output: z.object({ total: z.number(), line: z.string() }),
  handler: async (_input, ctx) => {
    const total = Number((await ctx.state("counter/counts").get("total")) ?? 0);
    return { total, line: `counter has counted to ${total}` };
  },
});

export default defineModule({ tools: [show] });
