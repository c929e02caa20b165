import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { ErrorCode, Manifest, type ManifestInput } from "@mesh/protocol";
import { checkManifest } from "./manifest-check.js";
import { broker, daemon, refusals as table, tools } from "./manifest-check-cases.js";
import { ManifestRule, formatProblem, manifestInvalid } from "./manifest-problem.js";
import { digest, fixture } from "./test-support.js";

const good: { name: string; input: ManifestInput }[] = [
  { name: "a tools module", input: { module: "hello", bundles: [tools] } },
  {
    name: "a daemon with everything",
    input: {
      module: "counter",
      description: "counts",
      bundles: [
        {
          name: "daemon",
          language: "typescript",
          entrypoints: ["src/main.ts"],
          digest: digest("b"),
          size: 10,
        },
        {
          name: "tools",
          language: "prebuilt",
          source: "dist/t.tgz",
          digest: digest("c"),
          loads: ["index.js"],
        },
      ],
      processes: [
        {
          name: "daemon",
          bundle: "daemon",
          env: { LOG_LEVEL: "info" },
          "restart-on": ["config", "counter.need-broker", "counter.bundle-tools"],
        },
      ],
      states: [{ name: "counts", readable: true }, { name: "scratch" }],
      reads: ["other/state"],
      calls: ["hello/greet", "counter/get_count"],
      config: {
        step: { description: "how much", default: 1 },
        labels: { default: { a: [1, null] } },
      },
      "own-secrets": { broker: { path: "broker.json" } },
    },
  },
  {
    name: "the runtime",
    input: {
      module: "node-tools",
      bundles: [{ name: "runtime", language: "typescript", entrypoints: ["src/main.ts"] }],
      "own-secrets": broker,
    },
  },
  {
    name: "a filtered module",
    input: {
      module: "firewall",
      bundles: [
        {
          name: "tools",
          language: "prebuilt",
          source: "fw.tgz",
          digest: digest("d"),
          loads: ["fw.js"],
        },
      ],
      filter: { description: "opens ports" },
    },
  },
];

const corpus = JSON.parse(
  readFileSync(fixture("bad-manifests", "expected.json"), "utf8"),
) as Record<string, { code: string; path: string }[]>;

describe("checkManifest", () => {
  for (const row of table) {
    it(`refuses ${row.name}`, () => {
      const checked = checkManifest(row.input);
      assert.equal(checked.ok, false);
      if (checked.ok) return;
      assert.equal(checked.code, ErrorCode.MANIFEST_INVALID);
      assert.deepEqual(
        checked.problems.map((p) => `${p.code}@${p.path}`).sort(),
        [...row.want].sort(),
        checked.problems.map(formatProblem).join("\n"),
      );
    });
  }

  for (const row of good) {
    it(`accepts ${row.name}, with defaults filled in`, () => {
      const checked = checkManifest(row.input);
      assert.ok(checked.ok, checked.ok ? "" : checked.problems.map(formatProblem).join("\n"));
      assert.deepEqual(checked.manifest, Manifest.parse(row.input));
      assert.deepEqual(checked.manifest.reads, row.input.reads ?? []);
    });
  }

  it("has a refusing test (here or in the corpus) for every rule", () => {
    const tested = new Set<string>([
      ...table.flatMap((row) => row.want.map((w) => w.split("@")[0] ?? "")),
      ...Object.values(corpus).flatMap((problems) => problems.map((p) => p.code)),
    ]);
    // `format` and `value` are the fallbacks for schema issues that no manifest field gives today;
    // too-large is about text, and tested with parseManifestText.
    const elsewhere = new Set(["format", "value", "too-large"]);
    const untested = Object.keys(ManifestRule).filter(
      (id) => !tested.has(id) && !elsewhere.has(id),
    );
    assert.deepEqual(untested, []);
  });

  it("returns every problem at once, in path order", () => {
    const checked = checkManifest({
      module: "Bad",
      bundles: [{ name: "t", language: "typescript", entrypoints: ["a.ts"], loads: ["b.ts"] }],
      processes: [{ name: "d", bundle: "nope" }],
      reads: ["x"],
    });
    assert.ok(!checked.ok);
    assert.deepEqual(
      checked.problems.map((p) => `${p.code}@${p.path}`),
      [
        "load-is-entrypoint@bundles[0].loads[0]",
        "name-valid@module",
        "process-bundle-exists@processes[0].bundle",
        "read-well-formed@reads[0]",
      ],
    );
  });

  it("says what was found, the rule, and what to write instead", () => {
    const checked = checkManifest({
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "deamon" }],
    });
    assert.ok(!checked.ok);
    const p = checked.problems.find((found) => found.code === "process-bundle-exists");
    assert.equal(p?.value, "deamon");
    assert.deepEqual(p?.at, ["processes", 0, "bundle"]);
    assert.equal(p?.rule, ManifestRule["process-bundle-exists"]);
    assert.match(p?.message ?? "", /"deamon"/);
    assert.match(p?.fix ?? "", /"daemon"/);
  });

  it("suggests the field that was meant", () => {
    const checked = checkManifest({
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", restart_on: [] }],
    });
    assert.ok(!checked.ok);
    assert.match(checked.problems[0]?.fix ?? "", /"restart-on"/);
  });

  it("suggests the field of a rollout policy that was meant, as of any object in a manifest", () => {
    // The fields were once looked up in a hand-kept list of the manifest's objects that had no
    // rollout: the fix then named no field at all.
    const checked = checkManifest({ module: "c", rollout: { canery: 1 } });
    assert.ok(!checked.ok);
    assert.deepEqual(
      checked.problems.map((p) => [p.code, p.at, p.fix]),
      [["unknown-field", ["rollout", "canery"], 'write "canary" instead']],
    );
  });

  it("keeps long values short in a problem", () => {
    const checked = checkManifest({ module: "x".repeat(5000) });
    assert.ok(!checked.ok);
    const value = checked.problems[0]?.value;
    assert.ok(typeof value === "string" && value.length < 300);
  });

  it("refuses a cycle and deep nesting without overflowing", () => {
    const cyclic: Record<string, unknown> = { module: "c" };
    cyclic.config = { k: { default: cyclic } };
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    for (const input of [cyclic, { module: "c", config: { k: { default: deep } } }]) {
      const checked = checkManifest(input);
      assert.ok(!checked.ok);
      assert.equal(checked.problems[0]?.code, "too-deep");
    }
  });

  it("makes one error of every problem", () => {
    const checked = checkManifest({ module: "Bad", reads: ["x"] });
    assert.ok(!checked.ok);
    const error = manifestInvalid(checked.problems, { module: "Bad" });
    assert.equal(error.code, ErrorCode.MANIFEST_INVALID);
    assert.equal(error.module, "Bad");
    assert.match(error.message, /name-valid/);
    assert.match(error.message, /read-well-formed/);
  });
});
