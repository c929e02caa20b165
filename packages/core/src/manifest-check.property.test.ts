import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { Manifest } from "@mesh/protocol";
import { checkManifest } from "./manifest-check.js";
import { ManifestRule } from "./manifest-problem.js";
import { digest } from "./test-support.js";

describe("checkManifest", () => {
  it("never throws, and every problem is well-formed, whatever the input", () => {
    const ids = new Set(Object.keys(ManifestRule));
    fc.assert(
      fc.property(manifestLike(), (input) => {
        const checked = checkManifest(input);
        if (checked.ok) {
          assert.deepEqual(checked.manifest, Manifest.parse(input));
          return;
        }
        assert.ok(checked.problems.length > 0);
        for (const p of checked.problems) {
          assert.ok(ids.has(p.code), p.code);
          assert.equal(typeof p.path, "string");
          assert.ok(p.message.length > 0 && p.fix.length > 0);
          JSON.stringify(p);
        }
      }),
      { numRuns: 500 },
    );
  });
});

/** Values near a manifest: right and wrong fields, right and wrong types, anything at all. */
function manifestLike(): fc.Arbitrary<unknown> {
  const word = fc.constantFrom(
    "hello",
    "node-tools",
    "host",
    "Bad",
    "",
    "a/b",
    "c.d",
    "config",
    "src/main.ts",
    "../x",
    "MESH_X",
    "/etc/x",
    "broker",
    "typescript",
    "prebuilt",
    "x.need-broker",
  );
  const loose = fc.oneof(word, fc.anything({ maxDepth: 2 }));
  const list = fc.array(loose, { maxLength: 3 });
  const bundle = fc.record(
    {
      name: loose,
      language: fc.oneof(fc.constantFrom("typescript", "prebuilt"), loose),
      entrypoints: list,
      loads: list,
      source: loose,
      digest: fc.oneof(fc.constant(digest("a")), loose),
      size: loose,
    },
    { requiredKeys: [] },
  );
  const process = fc.record(
    {
      name: loose,
      bundle: loose,
      run: list,
      env: fc.dictionary(word, loose, { maxKeys: 2 }),
      "restart-on": list,
    },
    { requiredKeys: [] },
  );
  const manifest = fc.record(
    {
      module: loose,
      bundles: fc.oneof(fc.array(bundle, { maxLength: 3 }), loose),
      processes: fc.oneof(fc.array(process, { maxLength: 2 }), loose),
      states: fc.array(fc.record({ name: loose, readable: loose }, { requiredKeys: [] }), {
        maxLength: 2,
      }),
      reads: list,
      calls: list,
      config: fc.dictionary(
        word,
        fc.record({ description: loose, default: loose }, { requiredKeys: [] }),
        { maxKeys: 2 },
      ),
      "own-secrets": fc.dictionary(word, fc.record({ path: loose }, { requiredKeys: [] }), {
        maxKeys: 2,
      }),
      filter: loose,
      extra: loose,
    },
    { requiredKeys: [] },
  );
  return fc.oneof(manifest, fc.anything());
}
