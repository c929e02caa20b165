import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ConfigValueSchema } from "@mesh/protocol";
import { checkConfigValue, describeConfigViolations } from "./config-schema.js";
import { checkManifest } from "./manifest-check.js";

const tools = {
  name: "tools",
  language: "typescript" as const,
  entrypoints: ["src/tools.ts"],
  loads: ["src/tools.ts"],
};

/** Each row: a declaration, a value, and the rules it breaks (`path:rule`), none when it fits. */
const values: { schema: ConfigValueSchema; value: unknown; broken: string[] }[] = [
  { schema: {}, value: { anything: [1, "x"] }, broken: [] },
  { schema: { type: "integer" }, value: 3, broken: [] },
  { schema: { type: "integer" }, value: 3.5, broken: [":type"] },
  { schema: { type: "number" }, value: 3, broken: [] },
  { schema: { type: "integer" }, value: "lots", broken: [":type"] },
  { schema: { type: ["string", "null"] }, value: null, broken: [] },
  { schema: { type: "boolean" }, value: "true", broken: [":type"] },
  { schema: { type: "integer", minimum: 1, maximum: 100 }, value: 101, broken: [":maximum"] },
  { schema: { type: "integer", minimum: 1, maximum: 100 }, value: 0, broken: [":minimum"] },
  { schema: { exclusiveMinimum: 0 }, value: 0, broken: [":exclusiveMinimum"] },
  { schema: { exclusiveMaximum: 1 }, value: 0.5, broken: [] },
  { schema: { multipleOf: 5 }, value: 12, broken: [":multipleOf"] },
  { schema: { enum: ["fast", "slow"] }, value: "medium", broken: [":enum"] },
  { schema: { enum: [{ a: 1, b: 2 }] }, value: { b: 2, a: 1 }, broken: [] },
  { schema: { const: 7 }, value: 8, broken: [":const"] },
  { schema: { type: "string", pattern: "^[a-z]+$" }, value: "Hi", broken: [":pattern"] },
  { schema: { minLength: 2, maxLength: 3 }, value: "abcd", broken: [":maxLength"] },
  { schema: { minLength: 2 }, value: "é", broken: [":minLength"] },
  {
    schema: { type: "array", items: { type: "integer", minimum: 0 }, maxItems: 3 },
    value: [1, -1, "x"],
    broken: ["[1]:minimum", "[2]:type"],
  },
  { schema: { type: "array", minItems: 1 }, value: [], broken: [":minItems"] },
  { schema: { uniqueItems: true }, value: [1, 2, 1], broken: [":uniqueItems"] },
];

describe("checkConfigValue", () => {
  for (const row of values) {
    it(`${JSON.stringify(row.schema)} against ${JSON.stringify(row.value)}`, () => {
      const got = checkConfigValue(row.schema, row.value).map((v) => `${v.path}:${v.rule}`);
      assert.deepEqual(got, row.broken);
    });
  }

  it("the refusal names the key, the value, the rule as declared and what to do", () => {
    const violations = checkConfigValue({ type: "integer", maximum: 100 }, 250);
    const text = describeConfigViolations("notes", "max", violations);
    assert.match(text, /"max"/);
    assert.match(text, /250 is more than 100/);
    assert.match(text, /the rule maximum: 100/);
    assert.match(text, /mesh config get notes max/);
  });
});

describe("a manifest's typed config", () => {
  const check = (config: unknown): string[] => {
    const result = checkManifest({ module: "notes", bundles: [tools], config });
    return result.ok ? [] : result.problems.map((p) => `${p.code}@${p.path}`);
  };

  it("a default that keeps its rules, and an untyped key, are good", () => {
    assert.deepEqual(
      check({
        max: { type: "integer", minimum: 1, maximum: 100, default: 10 },
        mode: { enum: ["a", "b"], default: "a" },
        tags: { type: "array", items: { type: "string", pattern: "^[a-z]+$" }, default: ["x"] },
        free: { default: { any: "thing" } },
        none: { description: "no default, no rules" },
      }),
      [],
    );
  });

  it("a default that breaks its rules is refused where it is", () => {
    assert.deepEqual(check({ max: { type: "integer", maximum: 100, default: "lots" } }), [
      "config-default-matches@config.max.default",
    ]);
    assert.deepEqual(check({ tags: { items: { type: "string" }, default: ["a", 2] } }), [
      "config-default-matches@config.tags.default",
    ]);
  });

  it("rules that cannot be met are refused", () => {
    assert.deepEqual(check({ name: { pattern: "([a-z" } }), [
      "config-schema-valid@config.name.pattern",
    ]);
    assert.deepEqual(check({ n: { minimum: 5, maximum: 1 } }), [
      "config-schema-valid@config.n.minimum",
    ]);
  });

  it("a rule of the wrong shape, or an unknown keyword, is a schema problem", () => {
    assert.deepEqual(check({ n: { minimum: "1" } }), ["type@config.n.minimum"]);
    assert.deepEqual(check({ n: { type: "int" } }), ["value@config.n.type"]);
    assert.deepEqual(check({ n: { format: "email" } }), ["unknown-field@config.n.format"]);
  });
});
