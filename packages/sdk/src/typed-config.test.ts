/** Typed config in module code: a zod schema types ctx.config and checks each value it hands. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineModule, defineTool, type ModuleConfigOf } from "./define.js";
import { testModule } from "./testing.js";
import { isToolError } from "./tool-error.js";

const config = z.object({ max: z.number().int().min(1), mode: z.enum(["fast", "slow"]) });

const limit = defineTool({
  name: "limit",
  description: "Says the limit.",
  input: z.object({}),
  config,
  handler: async (_input, ctx) => {
    const max: number = await ctx.config.get("max");
    const mode: "fast" | "slow" = await ctx.config.get("mode");
    // @ts-expect-error -- a key the schema does not have is a type error
    await ctx.config.get("colour").catch(() => undefined);
    return { max, mode };
  },
});

let seen: number[] = [];
const notes = defineModule({
  config,
  tools: [limit],
  start: (ctx) => {
    void (async () => {
      for await (const item of ctx.config.watch("max")) if ("value" in item) seen.push(item.value);
    })();
    return Promise.resolve();
  },
});

describe("typed config", () => {
  test("ctx.config.get hands the value typed by the schema", async () => {
    const mesh = testModule(notes, { config: { max: 3, mode: "fast" } });
    assert.deepEqual(await mesh.call("limit"), { max: 3, mode: "fast" });
  });

  test("a value that breaks the schema is REFUSED with the reason", async () => {
    const mesh = testModule(notes, { config: { max: "lots", mode: "fast" } });
    await assert.rejects(mesh.call("limit"), (error: unknown) => {
      assert.ok(isToolError(error));
      assert.equal(error.code, "REFUSED");
      assert.match(error.message, /"max"/);
      return true;
    });
  });

  test("ctx.config.watch hands the value, then each change", async () => {
    seen = [];
    const mesh = testModule(notes, { config: { max: 3, mode: "fast" } });
    const stop = new AbortController();
    await mesh.start(stop.signal);
    await until(() => seen.length === 1);
    mesh.setConfig("max", 5);
    await until(() => seen.length === 2);
    assert.deepEqual(seen, [3, 5]);
    stop.abort();
  });

  test("an untyped module's config is unknown and any key may be asked", async () => {
    const tool = defineTool({
      name: "any",
      description: "",
      input: z.object({}),
      handler: async (_i, ctx) => ({ v: await ctx.config.get("whatever") }),
    });
    const mesh = testModule(defineModule({ tools: [tool] }), { config: { whatever: [1] } });
    assert.deepEqual(await mesh.call("any"), { v: [1] });
  });

  test("ModuleConfigOf gives the schema's type, or the fallback for an untyped module", () => {
    type Typed = ModuleConfigOf<{ default: typeof notes }, "fallback">;
    const typed: Typed = { max: 1, mode: "slow" };
    const plain = defineModule({ tools: [] });
    const untyped: ModuleConfigOf<{ default: typeof plain }, "fallback"> = "fallback";
    assert.deepEqual([typed.max, untyped, plain.tools], [1, "fallback", []]);
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(condition(), "the condition never held");
}
