import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  RUNTIME_MODULE,
  type Manifest,
  type ManifestBundle,
  type ManifestProcess,
} from "@mesh/protocol";
import { compose, type NodeResolution } from "./composition.js";
import { canonicalJson } from "./fingerprint.js";

const hex = fc.constantFrom(..."0123456789abcdef".split(""));
const digest = fc.array(hex, { minLength: 64, maxLength: 64 }).map((cs) => cs.join(""));
const name = fc.constantFrom("a", "b", "c", "tools", "daemon", "web", "x-1");
const file = fc.constantFrom("src/a.ts", "src/b.ts", "main.ts", "lib/c.mts", "d.js");

const toolsBundle = (bundleName: string): fc.Arbitrary<ManifestBundle> =>
  fc
    .record({
      name: fc.constant(bundleName),
      language: fc.constant("typescript" as const),
      entrypoints: fc.uniqueArray(file, { minLength: 1, maxLength: 3 }),
      digest,
    })
    .map((b) => ({ ...b, loads: [...b.entrypoints] }));

const module = (moduleName: string): fc.Arbitrary<Manifest> =>
  fc
    .record({
      tools: fc.uniqueArray(name, { maxLength: 2 }),
      daemons: fc.uniqueArray(
        name.map((n) => `run-${n}`),
        { maxLength: 2 },
      ),
      env: fc.dictionary(fc.constantFrom("A", "B", "LOG", "Z_1"), fc.string({ maxLength: 4 }), {
        maxKeys: 4,
      }),
      restartOn: fc.uniqueArray(
        fc.constantFrom("config", `${moduleName}.need-broker`, "other.bundle-x"),
        { maxLength: 3 },
      ),
      secrets: fc.uniqueArray(fc.constantFrom("broker", "token", "key"), { maxLength: 3 }),
      filter: fc.boolean(),
      digests: fc.array(digest, { minLength: 4, maxLength: 4 }),
    })
    .chain((shape) =>
      fc.tuple(...shape.tools.map(toolsBundle)).map((tools): Manifest => {
        const daemons: ManifestBundle[] = shape.daemons.map((d, i) => ({
          name: d,
          language: "typescript",
          entrypoints: ["src/main.ts"],
          digest: shape.digests[i] ?? "",
        }));
        const processes: ManifestProcess[] = shape.daemons.map((d) => ({
          name: d,
          bundle: d,
          env: shape.env,
          "restart-on": shape.restartOn,
        }));
        return {
          module: moduleName,
          bundles: [...tools, ...daemons],
          processes,
          states: [],
          reads: [],
          calls: [],
          config: {},
          "own-secrets": Object.fromEntries(shape.secrets.map((s) => [s, { path: s }])),
          ...(shape.filter ? { filter: { description: "changes the machine" } } : {}),
        };
      }),
    );

const runtime = digest.map((d): Manifest => ({
  module: RUNTIME_MODULE,
  bundles: [{ name: "runtime", language: "typescript", entrypoints: ["src/main.ts"], digest: d }],
  processes: [],
  states: [],
  reads: [],
  calls: [],
  config: {},
  "own-secrets": { broker: { path: "broker.json" } },
}));

const resolution: fc.Arbitrary<NodeResolution> = fc
  .record({
    names: fc.uniqueArray(fc.constantFrom("hello", "counter", "firewall", "reports", "web"), {
      maxLength: 4,
    }),
    withRuntime: fc.boolean(),
    account: fc.option(fc.constantFrom("ada", "root"), { nil: undefined }),
    adopted: fc.boolean(),
    root: fc.option(fc.constantFrom("/var/lib/mesh", "/opt/mesh/", "/"), { nil: undefined }),
    store: fc.option(fc.constant({ store: "mesh-artifacts" }), { nil: undefined, freq: 5 }),
  })
  .chain((r) =>
    fc.tuple(fc.tuple(...r.names.map(module)), runtime).map(([modules, rt]): NodeResolution => ({
      node: "edge-01",
      modules: r.withRuntime ? [...modules, rt] : modules,
      account: r.account,
      adopted: r.adopted,
      root: r.root,
      artifacts: r.store,
    })),
  );

/** A deterministic shuffle from a seed (mulberry32), so a failing case replays. */
function shuffle<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const shuffleKeys = <V>(record: Record<string, V>, seed: number): Record<string, V> =>
  Object.fromEntries(shuffle(Object.entries(record), seed));

/** The same resolution, with every order that carries no meaning shuffled. */
function reordered(r: NodeResolution, seed: number): NodeResolution {
  return {
    ...r,
    modules: shuffle(r.modules, seed).map((m, i) => ({
      ...m,
      bundles: shuffle(m.bundles, seed + i),
      processes: shuffle(m.processes, seed + i + 1).map((p) => ({
        ...p,
        ...(p.env === undefined ? {} : { env: shuffleKeys(p.env, seed + i + 2) }),
        ...(p["restart-on"] === undefined
          ? {}
          : { "restart-on": shuffle(p["restart-on"], seed + i + 3) }),
      })),
      "own-secrets": shuffleKeys(m["own-secrets"], seed + i + 4),
    })),
  };
}

describe("compose: properties", () => {
  it("gives byte-identical output, whatever the order of modules, bundles, processes, env keys and secrets", () => {
    fc.assert(
      fc.property(resolution, fc.integer(), (r, seed) => {
        const a = compose(r);
        const b = compose(reordered(r, seed));
        assert.equal(JSON.stringify(b), JSON.stringify(a));
        if (a.ok && b.ok) assert.equal(a.fingerprint, b.fingerprint);
      }),
      { numRuns: 300 },
    );
  });

  it("is deterministic, and its resources are written canonically", () => {
    fc.assert(
      fc.property(resolution, (r) => {
        const a = compose(r);
        assert.equal(JSON.stringify(compose(r)), JSON.stringify(a));
        if (!a.ok) return;
        assert.equal(JSON.stringify(a.resources), canonicalJson(a.resources));
        const ids = a.resources.map((x) => x.id);
        assert.deepEqual(ids, [...new Set(ids)].sort());
      }),
      { numRuns: 300 },
    );
  });

  it("sends tools archives only where the runtime is, and never a bundle that is run", () => {
    fc.assert(
      fc.property(resolution, (r) => {
        const a = compose(r);
        if (!a.ok) return;
        const here = a.resources.some((x) => x.id === "node-tools.runtime");
        for (const x of a.resources) {
          if (x.type !== "archive") continue;
          assert.ok(here, `${x.id} sent without the runtime`);
          assert.ok(
            !a.resources.some((p) => p.type === "process" && p.path === x.path),
            `${x.id} is also run`,
          );
        }
      }),
      { numRuns: 200 },
    );
  });
});
