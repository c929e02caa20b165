// hello's tools: `greet` answers with the configured greeting. The greeting is watched, so
// `mesh config set hello greeting Hi` changes the next answer without a restart.
import { defineModule, defineTool, z } from "@mesh/sdk";

let greeting = "Hello";

const greet = defineTool({
  name: "greet",
  description: "Greets someone by name with the configured greeting.",
  input: z.object({ name: z.string().min(1).max(100).describe("Who to greet") }),
  output: z.object({ text: z.string() }),
  handler: ({ name }) => Promise.resolve({ text: `${greeting}, ${name}!` }),
});

export default defineModule({
  tools: [greet],
  start: async (ctx) => {
    const first = await ctx.provision.get("config", "greeting");
    if (typeof first === "string") greeting = first;
    void (async () => {
      for await (const item of ctx.provision.watch("config", "greeting")) {
        if ("value" in item && typeof item.value === "string") greeting = item.value;
      }
    })();
  },
});
