/**
 * Fuzzing the manifest check: values drawn from the manifest's own JSON Schema (valid ones, and
 * ones with any node swapped for anything at all), the same values as YAML and JSON text, random
 * YAML-looking text, and the example manifests with random edits. Whatever comes in, the answer
 * is the manifest or MANIFEST_INVALID with coded, located, worded problems — never a throw.
 *
 * FUZZ_SEED=<n> replays a run; each property prints how many cases it ran.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { stringify } from "yaml";
import { ErrorCode, Manifest, manifestJsonSchema } from "@mesh/protocol";
import { checkManifest, type ManifestCheck } from "./manifest-check.js";
import { ManifestRule } from "./manifest-problem.js";
import { parseManifestText } from "./manifest-text.js";
import { repoFile } from "./test-support.js";

const SEED = Number(process.env["FUZZ_SEED"] ?? Date.now() % 2 ** 31);

type Schema = Record<string, unknown>;

/** Anything a parser could hand over: JSON values, and the odd ones YAML or a caller can make. */
const anything: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      undefined,
      Number.NaN,
      -0,
      Infinity,
      10n,
      new Date(0),
      Object.create(null) as unknown,
      "__proto__",
      { __proto__: { module: "x" } },
      "all",
      "../..",
      "/etc/passwd",
    ),
  },
);

/** Strings for a pattern: fast-check's own when it can read the pattern, else a few that fit. */
function patterned(pattern: string): fc.Arbitrary<string> {
  try {
    return fc.stringMatching(new RegExp(pattern), { size: "small" });
  } catch {
    return fc.constantFrom("hello", "src/main.ts", "a", "config", "x/y", "token");
  }
}

/** An arbitrary for the values a (small subset of) JSON Schema describes, as zod writes it. */
function fromSchema(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (Array.isArray(schema["enum"])) return fc.constantFrom(...(schema["enum"] as unknown[]));
  switch (schema["type"]) {
    case "string":
      return typeof schema["pattern"] === "string"
        ? patterned(schema["pattern"])
        : fc.string({ maxLength: 20 });
    case "integer":
      return fc.nat({ max: 1_000_000 });
    case "number":
      return fc.double({ noNaN: true });
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(fromSchema((schema["items"] as Schema | undefined) ?? {}, depth + 1), {
        maxLength: depth > 2 ? 1 : 3,
      });
    case "object": {
      const properties = (schema["properties"] as Record<string, Schema> | undefined) ?? {};
      const required = new Set((schema["required"] as string[] | undefined) ?? []);
      const extra = schema["additionalProperties"];
      if (Object.keys(properties).length === 0 && typeof extra === "object" && extra !== null) {
        const keys = schema["propertyNames"] as Schema | undefined;
        return fc.dictionary(
          keys === undefined
            ? fc.stringMatching(/^[a-z][a-z0-9_-]{0,8}$/)
            : (fromSchema(keys) as fc.Arbitrary<string>),
          fromSchema(extra as Schema, depth + 1),
          { maxKeys: 3 },
        );
      }
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, value] of Object.entries(properties))
        record[key] = fromSchema(value, depth + 1);
      return fc.record(record, {
        requiredKeys: Object.keys(properties).filter((k) => required.has(k)),
      });
    }
    default:
      // No type (a config default): any JSON value, so the text forms can be written.
      return fc.jsonValue({ maxDepth: 3 });
  }
}

/** Replaces the value at one random place of `value` with anything (or adds an unknown key). */
function mutate(value: unknown, path: readonly number[], replacement: unknown): unknown {
  if (path.length === 0 || typeof value !== "object" || value === null) return replacement;
  const [step = 0, ...rest] = path;
  if (Array.isArray(value)) {
    if (value.length === 0) return [replacement];
    const i = step % value.length;
    return (value as unknown[]).map((v, j) => (j === i ? mutate(v, rest, replacement) : v));
  }
  const keys = Object.keys(value);
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (keys.length === 0 || step % 7 === 6) out[`unknown${step}`] = replacement;
  else {
    const key = keys[step % keys.length] as string;
    out[key] = mutate(out[key], rest, replacement);
  }
  return out;
}

/** Whatever the check answered is well-formed: the manifest, or coded problems. */
function assertCoded(result: ManifestCheck): void {
  if (result.ok) {
    assert.equal(Manifest.safeParse(result.manifest).success, true);
    return;
  }
  assert.equal(result.code, ErrorCode.MANIFEST_INVALID);
  assert.ok(result.problems.length > 0, "refused with no problem");
  for (const p of result.problems) {
    assert.ok(Object.hasOwn(ManifestRule, p.code), `unknown problem code ${p.code}`);
    assert.equal(typeof p.message, "string");
    assert.equal(typeof p.fix, "string");
    assert.equal(typeof p.path, "string");
    assert.ok(p.message.length > 0 && p.fix.length > 0);
  }
}

/** Runs a property and says how many cases it tried. */
function run<T>(
  name: string,
  arbitrary: fc.Arbitrary<T>,
  check: (v: T) => void,
  numRuns: number,
): void {
  let cases = 0;
  fc.assert(
    fc.property(arbitrary, (v) => {
      cases += 1;
      check(v);
    }),
    { numRuns, seed: SEED },
  );
  console.log(`${name}: ${cases} cases (seed ${SEED})`);
}

const schemaValues = fromSchema(manifestJsonSchema());

describe("fuzzing the manifest check", () => {
  it("values from the manifest's JSON Schema, as values, YAML and JSON text: never a throw, always coded", () => {
    run(
      "schema values",
      schemaValues,
      (value) => {
        assertCoded(checkManifest(value));
        assertCoded(parseManifestText(stringify(value), "yaml"));
        assertCoded(parseManifestText(JSON.stringify(value), "json"));
      },
      300,
    );
  });

  it("schema values with one place swapped for anything at all: never a throw, always coded", () => {
    run(
      "mutated schema values",
      fc.tuple(schemaValues, fc.array(fc.nat(50), { maxLength: 5 }), anything),
      ([value, path, replacement]) => {
        const mutated = mutate(value, path, replacement);
        assertCoded(checkManifest(mutated));
        let text: string | undefined;
        try {
          text = stringify(mutated);
        } catch {
          // Not every JS value has a YAML form (a bigint, a symbol): nothing to read then.
        }
        if (text !== undefined) assertCoded(parseManifestText(text, "yaml"));
      },
      400,
    );
  });

  it("random YAML-looking text: never a throw, always coded", () => {
    const yamlish = fc
      .array(
        fc.oneof(
          fc.constantFrom(
            ":",
            " ",
            "  ",
            "\n",
            "- ",
            "[",
            "]",
            "{",
            "}",
            ",",
            "&a ",
            "*a",
            "!!str ",
            "!x ",
            "|",
            ">",
            "'",
            '"',
            "#",
            "---\n",
            "...\n",
            "? ",
            "<<: ",
            "\t",
            "%YAML 1.2\n",
            "module",
            "bundles",
            "processes",
            "own-secrets",
            "config",
            "name",
            "hello",
            "\\u0000",
          ),
          fc.string({ maxLength: 6 }),
        ),
        { maxLength: 60 },
      )
      .map((parts) => parts.join(""));
    run(
      "random YAML text",
      yamlish,
      (text) => {
        assertCoded(parseManifestText(text, "yaml"));
        assertCoded(parseManifestText(text, "json"));
      },
      1000,
    );
  });

  it("the example manifests with random edits: never a throw, always coded", () => {
    const dir = repoFile("examples", "modules");
    const examples = readdirSync(dir).map((m) => readFileSync(join(dir, m, "mesh.yaml"), "utf8"));
    const edit = fc.record({
      at: fc.nat(),
      cut: fc.nat(20),
      insert: fc.oneof(
        fc.string({ maxLength: 8 }),
        fc.constantFrom(":", "\n  ", "- ", "[", "&a", "*a"),
      ),
    });
    run(
      "edited examples",
      fc.tuple(fc.constantFrom(...examples), fc.array(edit, { minLength: 1, maxLength: 4 })),
      ([text, edits]) => {
        let edited = text;
        for (const e of edits) {
          const at = e.at % (edited.length + 1);
          edited = edited.slice(0, at) + e.insert + edited.slice(at + e.cut);
        }
        assertCoded(parseManifestText(edited, "yaml"));
      },
      1000,
    );
  });
});
