/** The manifests and nodes the composition tests are made of, and how they read an outcome. */
import assert from "node:assert/strict";
import {
  ErrorCode,
  Resource,
  type Manifest,
  type ManifestInput,
  type ProcessResource,
  type Resource as ResourceValue,
} from "@mesh/protocol";
import { compose, type NodeResolution } from "./composition.js";
import { digest, manifest } from "./test-support.js";

export const STORE = { store: "mesh-artifacts" };

export const runtime = (over: Partial<ManifestInput> = {}): Manifest =>
  manifest({
    module: "node-tools",
    bundles: [
      {
        name: "runtime",
        language: "typescript",
        entrypoints: ["src/main.ts"],
        digest: digest("e"),
      },
    ],
    "own-secrets": { broker: { path: "broker.json" } },
    ...over,
  });

export const hello = manifest({
  module: "hello",
  bundles: [
    {
      name: "tools",
      language: "typescript",
      entrypoints: ["src/b.ts", "src/a.ts"],
      loads: ["src/b.ts", "src/a.ts"],
      digest: digest("a"),
    },
  ],
  "own-secrets": { token: { path: "token" } },
});

export const counter = manifest({
  module: "counter",
  bundles: [
    { name: "daemon", language: "typescript", entrypoints: ["src/main.mts"], digest: digest("b") },
    {
      name: "tools",
      language: "typescript",
      entrypoints: ["src/tools.ts"],
      loads: ["src/tools.ts"],
      digest: digest("c"),
    },
  ],
  processes: [
    {
      name: "daemon",
      bundle: "daemon",
      env: { B: "2", A: "1" },
      "restart-on": ["config", "counter.bundle-tools"],
    },
    { name: "once", bundle: "daemon", run: ["node", "src/main.js", "--once"] },
  ],
  config: { step: { default: 1 } },
  "own-secrets": { broker: { path: "broker.json" } },
});

export const firewall = manifest({
  module: "firewall",
  bundles: [
    {
      name: "tools",
      language: "prebuilt",
      source: "dist/fw.tgz",
      digest: digest("d"),
      loads: ["fw.js"],
    },
  ],
  filter: { description: "opens ports" },
});

/** A daemon with no tools and no credential. */
export const plain = manifest({
  module: "plain",
  bundles: [{ name: "d", language: "typescript", entrypoints: ["d.ts"], digest: digest("f") }],
  processes: [{ name: "d", bundle: "d" }],
});

export const node = (modules: Manifest[], over: Partial<NodeResolution> = {}): NodeResolution => ({
  node: "edge-01",
  modules,
  artifacts: STORE,
  ...over,
});

export function ok(resolution: NodeResolution): ResourceValue[] {
  const composition = compose(resolution);
  assert.ok(composition.ok, composition.ok ? "" : JSON.stringify(composition.refusals, null, 2));
  for (const r of composition.resources) Resource.parse(r);
  return [...composition.resources];
}

export function refusals(resolution: NodeResolution): string[] {
  const composition = compose(resolution);
  assert.ok(!composition.ok, "composed, where a refusal was expected");
  assert.equal(composition.code, ErrorCode.COMPOSITION_REFUSED);
  for (const r of composition.refusals) assert.ok(r.reason.length > 0 && r.fix.length > 0);
  return composition.refusals.map(
    (r) => `${r.code}${r.module === undefined ? "" : `@${r.module}`}`,
  );
}

export const ids = (resources: readonly ResourceValue[]): string[] => resources.map((r) => r.id);
export const runtimeOf = (resources: readonly ResourceValue[]): ProcessResource => {
  const found = resources.find((r) => r.id === "node-tools.runtime");
  assert.ok(found?.type === "process", "no runtime process");
  return found;
};

/** A manifest as composition might be handed it, past what the schema allows (for refusals). */
export const raw = (value: unknown): Manifest => value as Manifest;
