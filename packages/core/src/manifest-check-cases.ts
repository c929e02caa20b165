/**
 * The manifests the checkManifest tests are made of: one row per rule that refuses, with every
 * problem it must give as code@path. Shared by the table test and the rule coverage test.
 */
import { digest } from "./test-support.js";

export const tools = {
  name: "tools",
  language: "typescript" as const,
  entrypoints: ["src/tools.ts"],
  loads: ["src/tools.ts"],
};
export const daemon = {
  name: "daemon",
  language: "typescript" as const,
  entrypoints: ["src/main.ts"],
};
const runtimeBundle = {
  name: "runtime",
  language: "typescript" as const,
  entrypoints: ["src/main.ts"],
};
export const broker = { broker: { path: "broker.json" } };

/** Each row breaks one rule; `want` is every problem the manifest must get, as code@path. */
export const refusals: { name: string; input: unknown; want: string[] }[] = [
  { name: "a manifest that is not a mapping", input: "hello", want: ["type@"] },
  { name: "no module", input: { bundles: [tools] }, want: ["required@module"] },
  {
    name: "a module name with capitals",
    input: { module: "Hello", bundles: [tools] },
    want: ["name-valid@module"],
  },
  {
    name: "a reserved module name",
    input: { module: "host", bundles: [tools] },
    want: ["module-name-reserved@module"],
  },
  {
    name: "a module named as a narrowed mcp credential",
    input: { module: "mcp-hello", bundles: [tools] },
    want: ["module-name-reserved@module"],
  },
  {
    name: "an unknown field",
    input: { module: "hello", bundles: [tools], tools: [] },
    want: ["unknown-field@tools"],
  },
  {
    name: "an unknown field of a process",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", user: "root" }],
    },
    want: ["unknown-field@processes[0].user"],
  },
  {
    name: "a bundle name with _",
    input: { module: "hello", bundles: [{ ...tools, name: "my_tools" }] },
    want: ["name-valid@bundles[0].name"],
  },
  {
    name: "a process name with a dot",
    input: { module: "c", bundles: [daemon], processes: [{ name: "d.1", bundle: "daemon" }] },
    want: ["name-valid@processes[0].name"],
  },
  {
    name: "a state name too long",
    input: { module: "c", bundles: [tools], states: [{ name: `s${"x".repeat(63)}` }] },
    want: ["name-valid@states[0].name"],
  },
  {
    name: "a language that is not a language name",
    input: { module: "hello", bundles: [{ ...tools, language: "Type Script" }] },
    want: ["language-known@bundles[0].language"],
  },
  {
    name: "a python bundle that lists loads (its process serves its tools)",
    input: { module: "hello", bundles: [{ ...tools, language: "python" }] },
    want: ["loads-typescript@bundles[0].loads"],
  },
  {
    name: "a digest that is not SHA-256 hex",
    input: { module: "hello", bundles: [{ ...tools, digest: "ABC" }] },
    want: ["digest-valid@bundles[0].digest"],
  },
  {
    name: "an entrypoint that leaves the bundle",
    input: {
      module: "hello",
      bundles: [{ ...tools, entrypoints: ["src/../../x.ts"], loads: ["src/../../x.ts"] }],
    },
    want: [
      "bundle-path-relative@bundles[0].entrypoints[0]",
      "bundle-path-relative@bundles[0].loads[0]",
    ],
  },
  {
    name: "a secret path that climbs out of the secrets folder",
    input: { module: "hello", bundles: [tools], "own-secrets": { token: { path: "../token" } } },
    want: ["secret-path-inside@own-secrets.token.path"],
  },
  {
    name: "an absolute secret path (the node would write it anywhere)",
    input: {
      module: "hello",
      bundles: [tools],
      "own-secrets": { token: { path: "/etc/cron.d/x" } },
    },
    want: ["secret-path-inside@own-secrets.token.path"],
  },
  {
    name: "a prebuilt source outside the module's source (absolute, climbing, or a URL)",
    input: {
      module: "pre",
      bundles: [
        { name: "a", language: "prebuilt", source: "/etc/passwd", digest: "a".repeat(64) },
        { name: "b", language: "prebuilt", source: "../other/b.tgz", digest: "b".repeat(64) },
        { name: "c", language: "prebuilt", source: "file:///x.tgz", digest: "c".repeat(64) },
      ],
      processes: [
        { name: "a", bundle: "a", run: ["a"] },
        { name: "b", bundle: "b", run: ["b"] },
        { name: "c", bundle: "c", run: ["c"] },
      ],
    },
    want: [
      "prebuilt-source-inside@bundles[0].source",
      "prebuilt-source-inside@bundles[1].source",
      "prebuilt-source-inside@bundles[2].source",
    ],
  },
  {
    name: "a config key with a space",
    input: { module: "hello", bundles: [tools], config: { "a b": {} } },
    want: ['config-key-valid@config["a b"]'],
  },
  {
    name: "a config default that breaks its own declared type",
    input: {
      module: "hello",
      bundles: [tools],
      config: { max: { type: "integer", maximum: 100, default: "lots" } },
    },
    want: ["config-default-matches@config.max.default"],
  },
  {
    name: "a config key whose bounds cross",
    input: { module: "hello", bundles: [tools], config: { max: { minimum: 10, maximum: 1 } } },
    want: ["config-schema-valid@config.max.minimum"],
  },
  {
    name: "a secret name with capitals",
    input: { module: "hello", bundles: [tools], "own-secrets": { Token: { path: "t" } } },
    want: ["secret-name-valid@own-secrets.Token"],
  },
  {
    name: "an environment name the mesh keeps",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", env: { MESH_TOOL_MODULES: "x" } }],
    },
    want: ["env-reserved@processes[0].env.MESH_TOOL_MODULES"],
  },
  {
    name: "an environment name with a dash",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", env: { "LOG-LEVEL": "x" } }],
    },
    want: ["env-name-valid@processes[0].env.LOG-LEVEL"],
  },
  {
    name: "a read with a dot",
    input: { module: "hello", bundles: [tools], reads: ["counter.counts"] },
    want: ["read-well-formed@reads[0]"],
  },
  {
    name: "a call without a tool",
    input: { module: "hello", bundles: [tools], calls: ["counter/"] },
    want: ["call-well-formed@calls[0]"],
  },
  {
    name: "a restart-on entry that is no id",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", "restart-on": ["every hour"] }],
    },
    want: ["restart-on-valid@processes[0].restart-on[0]"],
  },
  {
    name: "an empty description of a filter",
    input: { module: "fw", bundles: [tools], filter: { description: "" } },
    want: ["not-empty@filter.description"],
  },
  {
    name: "an empty run",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", run: [] }],
    },
    want: ["not-empty@processes[0].run"],
  },
  {
    name: "a negative size",
    input: { module: "hello", bundles: [{ ...tools, size: -3 }] },
    want: ["number-range@bundles[0].size"],
  },
  {
    name: "a size that is not whole",
    input: { module: "hello", bundles: [{ ...tools, size: 1.5 }] },
    want: ["type@bundles[0].size"],
  },
  {
    name: "a readable that is text",
    input: { module: "c", bundles: [tools], states: [{ name: "s", readable: "true" }] },
    want: ["type@states[0].readable"],
  },
  {
    name: "two bundles of one name",
    input: { module: "hello", bundles: [tools, tools] },
    want: ["name-unique@bundles[1].name"],
  },
  {
    name: "two processes of one name",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [
        { name: "d", bundle: "daemon" },
        { name: "d", bundle: "daemon" },
      ],
    },
    want: ["name-unique@processes[1].name"],
  },
  {
    name: "two states of one name",
    input: { module: "c", bundles: [tools], states: [{ name: "s" }, { name: "s" }] },
    want: ["name-unique@states[1].name"],
  },
  {
    name: "a call listed twice",
    input: { module: "hello", bundles: [tools], calls: ["a/b", "a/b"] },
    want: ["no-duplicates@calls[1]"],
  },
  {
    name: "an entrypoint listed twice",
    input: {
      module: "hello",
      bundles: [{ ...tools, entrypoints: ["src/tools.ts", "src/tools.ts"] }],
    },
    want: ["no-duplicates@bundles[0].entrypoints[1]"],
  },
  {
    name: "a process of a bundle not declared",
    input: { module: "c", bundles: [tools], processes: [{ name: "d", bundle: "daemon" }] },
    want: ["process-bundle-exists@processes[0].bundle"],
  },
  {
    name: "a prebuilt process without run",
    input: {
      module: "c",
      bundles: [
        {
          name: "bin",
          language: "prebuilt",
          source: "bin.tgz",
          digest: digest("a"),
          entrypoints: ["bin/c"],
        },
      ],
      processes: [{ name: "d", bundle: "bin" }],
    },
    want: ["process-run-needed@processes[0].run"],
  },
  {
    name: "a bundle nothing uses",
    input: { module: "c", bundles: [daemon] },
    want: ["bundle-used@bundles[0].name"],
  },
  {
    name: "a bundle loaded and run",
    input: { module: "c", bundles: [tools], processes: [{ name: "d", bundle: "tools" }] },
    want: ["bundle-loaded-or-run@bundles[0].loads"],
  },
  {
    name: "empty loads",
    input: { module: "c", bundles: [{ ...tools, loads: [] }] },
    want: ["loads-not-empty@bundles[0].loads"],
  },
  {
    name: "a load that is not an entrypoint",
    input: { module: "c", bundles: [{ ...tools, loads: ["src/other.ts"] }] },
    want: ["load-is-entrypoint@bundles[0].loads[0]"],
  },
  {
    name: "a typescript bundle without entrypoints",
    input: {
      module: "c",
      bundles: [{ name: "daemon", language: "typescript" }],
      processes: [{ name: "d", bundle: "daemon" }],
    },
    want: ["entrypoint-needed@bundles[0].entrypoints"],
  },
  {
    name: "a typescript entrypoint without a known ending",
    input: {
      module: "c",
      bundles: [{ ...daemon, entrypoints: ["main"] }],
      processes: [{ name: "d", bundle: "daemon" }],
    },
    want: ["entrypoint-extension@bundles[0].entrypoints[0]"],
  },
  {
    name: "two entrypoints built to one file",
    input: {
      module: "c",
      bundles: [{ ...daemon, entrypoints: ["a.ts", "a.tsx"] }],
      processes: [{ name: "d", bundle: "daemon" }],
    },
    want: ["entrypoint-built-clash@bundles[0].entrypoints[1]"],
  },
  {
    name: "a prebuilt bundle without source and digest",
    input: { module: "c", bundles: [{ name: "tools", language: "prebuilt", loads: ["index.js"] }] },
    want: ["prebuilt-source@bundles[0].source", "prebuilt-digest@bundles[0].digest"],
  },
  {
    name: "a module that is not a mesh part names the mesh's buckets",
    input: { module: "c", bundles: [tools], reads: ["mesh/wants"], writes: ["mesh/wants"] },
    want: ["mesh-part-only@reads[0]", "mesh-part-only@writes[0]"],
  },
  {
    name: "a mesh part names a bucket the mesh does not have, and the secrets",
    input: { module: "mesh-assigner", bundles: [tools], reads: ["mesh/nope", "mesh/secrets"] },
    want: ["mesh-resource-known@reads[0]", "mesh-resource-known@reads[1]"],
  },
  {
    name: "a mesh part writes the conditions stream and reads the build asks",
    input: {
      module: "mesh-builder",
      bundles: [tools],
      reads: ["mesh/build", "mesh/modules"],
      writes: ["mesh/conditions", "mesh/builds"],
    },
    want: ["mesh-resource-direction@reads[0]", "mesh-resource-direction@writes[0]"],
  },
  {
    name: "a read of its own state",
    input: { module: "c", bundles: [tools], reads: ["c/s"] },
    want: ["read-not-own@reads[0]"],
  },
  {
    name: "a restart-on of its own resource that is not declared",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", "restart-on": ["c.need-broker"] }],
    },
    want: ["restart-on-exists@processes[0].restart-on[0]"],
  },
  {
    name: "a restart-on config without config",
    input: {
      module: "c",
      bundles: [daemon],
      processes: [{ name: "d", bundle: "daemon", "restart-on": ["config"] }],
    },
    want: ["restart-on-config-declared@processes[0].restart-on[0]"],
  },
  {
    name: "two secrets in one file",
    input: {
      module: "c",
      bundles: [tools],
      "own-secrets": { a: { path: "x" }, b: { path: "x" } },
    },
    want: ["secret-path-unique@own-secrets.b.path"],
  },
  {
    name: "the runtime without bundles",
    input: { module: "node-tools", "own-secrets": broker },
    want: ["runtime-one-bundle@bundles"],
  },
  {
    name: "the runtime with two bundles",
    input: {
      module: "node-tools",
      bundles: [runtimeBundle, { ...runtimeBundle, name: "other" }],
      "own-secrets": broker,
    },
    want: ["runtime-one-bundle@bundles"],
  },
  {
    name: "the runtime with two entrypoints",
    input: {
      module: "node-tools",
      bundles: [{ ...runtimeBundle, entrypoints: ["a.ts", "b.ts"] }],
      "own-secrets": broker,
    },
    want: ["runtime-one-entrypoint@bundles[0].entrypoints"],
  },
  {
    name: "the runtime prebuilt",
    input: {
      module: "node-tools",
      bundles: [
        {
          name: "runtime",
          language: "prebuilt",
          source: "rt.tgz",
          digest: digest("a"),
          entrypoints: ["main.js"],
        },
      ],
      "own-secrets": broker,
    },
    want: ["runtime-language@bundles[0].language"],
  },
  {
    name: "the runtime without broker",
    input: { module: "node-tools", bundles: [runtimeBundle] },
    want: ["runtime-broker-secret@own-secrets.broker"],
  },
  {
    name: "the runtime with loads",
    input: {
      module: "node-tools",
      bundles: [{ ...runtimeBundle, loads: ["src/main.ts"] }],
      "own-secrets": broker,
    },
    want: ["runtime-no-loads@bundles[0].loads"],
  },
  {
    name: "the runtime with a process",
    input: {
      module: "node-tools",
      bundles: [runtimeBundle],
      processes: [{ name: "r", bundle: "runtime" }],
      "own-secrets": broker,
    },
    want: ["runtime-no-processes@processes"],
  },
  {
    name: "the runtime with a filter",
    input: {
      module: "node-tools",
      bundles: [runtimeBundle],
      "own-secrets": broker,
      filter: { description: "x" },
    },
    want: ["runtime-no-filter@filter"],
  },
];
