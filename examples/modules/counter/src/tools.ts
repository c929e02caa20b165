// counter's tool reads the state its daemon keeps.
import { defineModule, defineTool, z } from "@mesh/sdk";

const read = defineTool({
  name: "read",
  description: "Reads counter's running total.",
  input: z.object({}),
  output: z.object({ total: z.number() }),
  handler: async (_input, ctx) => ({
    total: Number((await ctx.state("counts").get("total")) ?? 0),
  }),
});

export default defineModule({ tools: [read] });
