import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { argumentNotes, toolSignature, typeOf } from "./tool-signature.js";

const schema = (s: z.ZodType) => z.toJSONSchema(s, { unrepresentable: "any" });

describe("a tool's signature from its JSON Schema", () => {
  const rows: { name: string; input: z.ZodType; output?: z.ZodType; want: string }[] = [
    {
      name: "an object input, one optional field, an output",
      input: z.object({ name: z.string(), times: z.number().int().optional() }),
      output: z.object({ text: z.string() }),
      want: "hello/greet(name: string, times?: integer) → { text: string }",
    },
    { name: "no arguments", input: z.object({}), want: "hello/greet()" },
    {
      name: "enums, arrays, unions, nullables and records",
      input: z.object({
        mode: z.enum(["fast", "slow"]),
        tags: z.array(z.string()),
        either: z.union([z.string(), z.number()]),
        maybe: z.string().nullable(),
        labels: z.record(z.string(), z.number()),
        "odd-name": z.boolean(),
      }),
      want: 'hello/greet(mode: "fast" | "slow", tags: string[], either: string | number, maybe: string | null, labels: { [key: string]: number }, "odd-name": boolean)',
    },
    {
      name: "a non-object input",
      input: z.array(z.union([z.literal(1), z.literal(2)])),
      want: "hello/greet(input: (1 | 2)[])",
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const got = toolSignature({
        module: "hello",
        tool: "greet",
        input: schema(row.input),
        ...(row.output === undefined ? {} : { output: schema(row.output) }),
      });
      assert.equal(got, row.want);
    });
  }

  test("nested objects are spelled out, then cut", () => {
    const deep = z.object({ a: z.object({ b: z.object({ c: z.object({ d: z.string() }) }) }) });
    assert.equal(typeOf(schema(deep)), "{ a: { b: { c: {…} } } }");
  });

  test("argument descriptions come as notes", () => {
    const input = schema(z.object({ name: z.string().describe("who to greet"), n: z.number() }));
    assert.deepEqual(argumentNotes(input), ["name: who to greet"]);
  });
});
