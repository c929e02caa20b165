/** defineTool and defineModule without a runtime: schemas, validation, errors, the brand. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineModule, defineTool } from "./define.js";
import { ToolError, isToolError } from "./tool-error.js";
import { MODULE_BRAND, PROTOCOL_VERSION, type WorkerHost } from "./worker-protocol.js";

const host: WorkerHost = {
  module: "alpha",
  node: "n1",
  ask: (op, params) => Promise.resolve({ op, params }),
  watch: () => Promise.resolve({ stop: () => undefined }),
  log: () => undefined,
};
const run = { host, signal: new AbortController().signal };

const add = defineTool({
  name: "add",
  description: "Adds.",
  input: z.object({ a: z.number(), b: z.number().int() }),
  output: z.object({ sum: z.number() }),
  handler: ({ a, b }) => Promise.resolve({ sum: a + b }),
});

describe("defineTool", () => {
  test("publishes its input and output as JSON Schema", () => {
    assert.equal(add.info.name, "add");
    assert.deepEqual(add.info.input["required"], ["a", "b"]);
    assert.deepEqual(Object.keys(add.info.output?.["properties"] as object), ["sum"]);
  });

  test("runs the handler with validated input", async () => {
    assert.deepEqual(await add.invoke({ a: 1, b: 2 }, run), { sum: 3 });
  });

  test("refuses bad input with INVALID_INPUT naming every path, before the handler", async () => {
    let ran = false;
    const tool = defineTool({
      name: "t",
      description: "",
      input: z.object({ a: z.string(), nested: z.object({ b: z.number() }) }),
      handler: () => {
        ran = true;
        return Promise.resolve(null);
      },
    });
    await assert.rejects(tool.invoke({ a: 1, nested: { b: "x" } }, run), (error: unknown) => {
      assert.ok(isToolError(error));
      assert.equal(error.code, "INVALID_INPUT");
      assert.match(error.message, /\ba: /);
      assert.match(error.message, /nested\.b: /);
      return true;
    });
    assert.equal(ran, false);
  });

  test("an output that breaks its schema is the module's error, not the caller's", async () => {
    const broken = defineTool({
      name: "broken",
      description: "",
      input: z.object({}),
      output: z.object({ n: z.number() }),
      handler: () => Promise.resolve({ n: "one" } as never),
    });
    await assert.rejects(broken.invoke({}, run), (error: unknown) => !isToolError(error));
  });

  test("refuses a tool name that cannot be a subject token", () => {
    assert.throws(() =>
      defineTool({
        name: "Bad.Name",
        description: "",
        input: z.object({}),
        handler: () => Promise.resolve(null),
      }),
    );
  });

  test("the context asks the runtime as it was given, never naming the module itself", async () => {
    const asked: unknown[] = [];
    const recording: WorkerHost = {
      ...host,
      ask: (op, params) => {
        asked.push({ op, params });
        return Promise.resolve("v");
      },
    };
    const tool = defineTool({
      name: "ctx",
      description: "",
      input: z.object({}),
      handler: async (_input, ctx) => {
        await ctx.provision.get("config", "greeting");
        await ctx.state("notes").put("k", 1);
        await ctx.condition("disk", "warning", "full");
        return ctx.module;
      },
    });
    assert.equal(await tool.invoke({}, { host: recording, signal: run.signal }), "alpha");
    assert.deepEqual(asked, [
      { op: "provision.get", params: { kind: "config", key: "greeting" } },
      { op: "state.put", params: { state: "notes", key: "k", value: 1 } },
      { op: "condition", params: { name: "disk", level: "warning", message: "full" } },
    ]);
  });
});

describe("defineModule", () => {
  test("carries the brand and protocol version the bootstrap checks", () => {
    const module = defineModule({ tools: [add] });
    assert.equal(module[MODULE_BRAND], PROTOCOL_VERSION);
    assert.equal(module.tools.length, 1);
  });

  test("refuses two tools of one name", () => {
    assert.throws(() => defineModule({ tools: [add, add] }), /twice/);
  });
});

describe("ToolError", () => {
  test("is recognised by shape, across copies of the SDK", () => {
    assert.ok(isToolError(new ToolError("REFUSED", "no")));
    assert.ok(isToolError({ meshToolError: true, code: "NOT_FOUND", message: "x" }));
    assert.ok(!isToolError(new Error("plain")));
    assert.ok(!isToolError({ meshToolError: true, code: "SOMETHING_ELSE" }));
  });

  test("a code outside the table becomes INTERNAL", () => {
    assert.equal(new ToolError("NOPE" as never, "x").code, "INTERNAL");
  });
});
