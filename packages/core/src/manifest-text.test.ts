import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "@mesh/protocol";
import { formatProblem } from "./manifest-problem.js";
import { MAX_MANIFEST_TEXT, manifestFormatOf, parseManifestText } from "./manifest-text.js";
import { fixture } from "./test-support.js";

const codes = (text: string, format: "yaml" | "json"): string[] => {
  const checked = parseManifestText(text, format);
  return checked.ok
    ? []
    : checked.problems.map((p) => `${p.code}@${p.path}@${p.line ?? "?"}:${p.column ?? "?"}`);
};

describe("parseManifestText", () => {
  it("reads a YAML manifest", () => {
    const checked = parseManifestText(
      "module: hello\nbundles:\n  - name: tools\n    language: typescript\n    entrypoints: [src/tools.ts]\n    loads: [src/tools.ts]\n",
      "yaml",
    );
    assert.ok(checked.ok);
    assert.equal(checked.manifest.module, "hello");
  });

  it("reads a JSON manifest, with a byte order mark", () => {
    const checked = parseManifestText(
      '\uFEFF{"module":"hello","bundles":[{"name":"tools","language":"typescript","entrypoints":["a.ts"],"loads":["a.ts"]}]}',
      "json",
    );
    assert.ok(checked.ok, checked.ok ? "" : checked.problems.map(formatProblem).join("\n"));
  });

  it("says the line and column of each problem, in the order of the text", () => {
    const text = [
      "module: hello", // 1
      "bundles:", // 2
      "  - name: tools", // 3
      "    language: typescript", // 4
      "    entrypoints: [src/tools.ts]", // 5
      "    loads: [src/tool.ts]", // 6
      "processes:", // 7
      "  - name: d", // 8
      "    bundle: daemon", // 9
      "    restart_on: [config]", // 10
      "reads: [hello/own]", // 11
    ].join("\n");
    assert.deepEqual(codes(text, "yaml"), [
      "load-is-entrypoint@bundles[0].loads[0]@6:13",
      "process-bundle-exists@processes[0].bundle@9:13",
      "unknown-field@processes[0].restart_on@10:5",
      "read-not-own@reads[0]@11:9",
    ]);
  });

  it("says where a JSON problem is", () => {
    const text = '{\n  "module": "hello",\n  "reads": ["x"],\n  "extra": 1\n}\n';
    assert.deepEqual(codes(text, "json"), [
      "read-well-formed@reads[0]@3:13",
      "unknown-field@extra@4:3",
    ]);
  });

  it("points a missing field at its parent", () => {
    assert.deepEqual(codes("bundles: []\n", "yaml"), ["required@module@1:1"]);
    assert.deepEqual(codes('{\n  "filter": {}, "module": "a"\n}', "json"), [
      "required@filter.description@2:13",
    ]);
  });

  it("tells YAML syntax faults with their place", () => {
    assert.deepEqual(codes("module: hello\nbundles:\n\t- name: x\n", "yaml"), ["syntax@@3:1"]);
    assert.deepEqual(
      codes("module: [hello\n", "yaml").map((c) => c.split("@")[0]),
      ["syntax"],
    );
    assert.deepEqual(codes("module: a\n---\nmodule: b\n", "yaml"), ["syntax@@2:1"]);
    assert.deepEqual(codes("module: a\nmodule: b\n", "yaml"), ["duplicate-key@@2:1"]);
    assert.deepEqual(codes("module: !tag a\n", "yaml"), ["syntax@@1:9"]);
    assert.deepEqual(codes("? [a]\n: 1\nmodule: a\n", "yaml"), ["key-not-text@@1:3"]);
  });

  it("tells JSON syntax faults with their place", () => {
    assert.deepEqual(codes('{"module": "a",}', "json"), ["syntax@@1:16"]);
    assert.deepEqual(codes('{"module": "a"} x', "json"), ["syntax@@1:17"]);
    assert.deepEqual(codes('{\n"module": "a\n"}', "json"), ["syntax@@2:13"]);
    assert.deepEqual(codes("", "json"), ["syntax@@1:1"]);
    assert.deepEqual(codes('{"module": 01}', "json"), ["syntax@@1:13"]);
    assert.deepEqual(codes('{"module": "\\x"}', "json"), ["syntax@@1:13"]);
    assert.deepEqual(codes('{"module": "a", "module": "b"}', "json"), [
      "duplicate-key@module@1:17",
    ]);
  });

  it("reads JSON as JSON.parse does", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value, null, 1);
        const checked = parseManifestText(text, "json");
        if (checked.ok) assert.deepEqual(checked.manifest, JSON.parse(text));
        else assert.ok(!checked.problems.some((p) => p.code === "syntax"), text);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses a text over 128 KiB without reading it", () => {
    const checked = parseManifestText(
      `module: a\ndescription: "${"x".repeat(MAX_MANIFEST_TEXT)}"\n`,
      "yaml",
    );
    assert.ok(!checked.ok);
    assert.deepEqual(
      checked.problems.map((p) => p.code),
      ["too-large"],
    );
  });

  it("refuses large inputs by a limit before they are walked: 100k lines, 10k bundles, deep nesting, a huge flow mapping", () => {
    const lines = (n: number, line: (i: number) => string): string =>
      ["module: big", ...Array.from({ length: n }, (_, i) => line(i))].join("\n");
    const cases: Array<[string, string, "yaml" | "json", string]> = [
      ["100k lines", lines(100_000, (i) => `k${i}: 1`), "yaml", "too-large"],
      ["100k comment lines", lines(100_000, () => "#"), "yaml", "too-large"],
      [
        "10k bundles",
        `module: big\nbundles:\n${Array.from({ length: 10_000 }, (_, i) => `  - {name: b${i}, language: typescript}`).join("\n")}`,
        "yaml",
        "too-large",
      ],
      [
        "10k bundles in JSON on one line",
        JSON.stringify({
          module: "big",
          bundles: Array.from({ length: 10_000 }, (_, i) => ({ name: `b${i}` })),
        }),
        "json",
        "too-large",
      ],
      [
        "25k values in JSON within the size limit",
        JSON.stringify({ module: "big", x: Array.from({ length: 25_000 }, () => 1) }),
        "json",
        "too-large",
      ],
      [
        "JSON nested 10,000 deep",
        `{"module":"x","x":${"[".repeat(10_000)}${"]".repeat(10_000)}}`,
        "json",
        "too-deep",
      ],
      [
        "YAML nested 500 deep",
        `module: x\nx: ${"{a: ".repeat(500)}1${"}".repeat(500)}`,
        "yaml",
        "too-deep",
      ],
    ];
    for (const [what, text, format, code] of cases) {
      const started = performance.now();
      const checked = parseManifestText(text, format);
      const ms = performance.now() - started;
      assert.ok(!checked.ok, what);
      assert.ok(
        checked.problems.some((p) => p.code === code),
        `${what}: ${checked.problems[0]?.code}`,
      );
      console.log(`${what}: ${text.length} characters, refused ${code} in ${ms.toFixed(0)} ms`);
    }
  });

  it("a duplicate key is found in one pass (a mapping of thousands of keys, one repeated)", () => {
    const keys = Array.from({ length: 4000 }, (_, i) => `  k${i}: {}`);
    keys.push("  k7: {}");
    const checked = parseManifestText(`module: a\nconfig:\n${keys.join("\n")}\n`, "yaml");
    assert.ok(!checked.ok);
    assert.deepEqual(
      checked.problems.map((p) => [p.code, p.line]),
      [["duplicate-key", 4003]],
    );
  });

  it("refuses alias bombs", () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 0; i < 12; i++) {
      const refs = Array.from({ length: 10 }, () => `*${String.fromCharCode(97 + i)}`).join(", ");
      bomb.push(`${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${refs}]`);
    }
    const checked = parseManifestText(`module: a\ndescription:\n  ${bomb.join("\n  ")}\n`, "yaml");
    assert.ok(!checked.ok);
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 200 }),
        fc.constantFrom("yaml" as const, "json" as const),
        (text, format) => {
          const checked = parseManifestText(text, format);
          if (!checked.ok) assert.equal(checked.code, ErrorCode.MANIFEST_INVALID);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("knows a manifest's format by its file name", () => {
    assert.equal(manifestFormatOf("mesh.yaml"), "yaml");
    assert.equal(manifestFormatOf("mesh.yml"), "yaml");
    assert.equal(manifestFormatOf("/src/mesh.json"), "json");
    assert.equal(manifestFormatOf("mesh.toml"), undefined);
  });
});

describe("the bad-manifest corpus", () => {
  const dir = fixture("bad-manifests");
  const expected = JSON.parse(
    readFileSync(fixture("bad-manifests", "expected.json"), "utf8"),
  ) as Record<string, { code: string; path: string }[]>;

  it("has at least 30 broken manifests, each with its expectation", () => {
    const files = readdirSync(dir).filter((f) => f !== "expected.json");
    assert.ok(files.length >= 30, `${files.length} files`);
    assert.deepEqual(files.sort(), Object.keys(expected).sort());
  });

  for (const [file, want] of Object.entries(expected)) {
    it(`refuses ${file} with ${want.map((w) => w.code).join(", ")}`, () => {
      // A name ending in .txt keeps a file with broken syntax away from the formatter.
      const format = manifestFormatOf(file.replace(/\.txt$/, ""));
      assert.ok(format !== undefined);
      const checked = parseManifestText(readFileSync(`${dir}/${file}`, "utf8"), format);
      assert.ok(!checked.ok, `${file} was accepted`);
      assert.deepEqual(
        checked.problems.map((p) => `${p.code}@${p.path}`).sort(),
        want.map((w) => `${w.code}@${w.path}`).sort(),
        checked.problems.map(formatProblem).join("\n"),
      );
      for (const p of checked.problems) assert.ok(p.fix.length > 0 && p.message.length > 0);
    });
  }
});

describe("numbers where text is expected", () => {
  it("are quoted back as they were written", () => {
    const checked = parseManifestText("module: a\ndescription: 1.10\n", "yaml");
    assert.ok(!checked.ok);
    assert.equal(checked.problems[0]?.value, "1.10");
    assert.match(checked.problems[0]?.fix ?? "", /"1\.10"/);
  });
});
