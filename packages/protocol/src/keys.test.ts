import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode, isMeshError } from "./errors.js";
import * as keys from "./keys.js";
import { parseToolSubject, toolSubject } from "./layout.js";
import { ALL_NODES } from "./names.js";
import {
  buildId,
  keyName,
  moduleName,
  nodeName,
  refusal,
  seq,
  target,
  toolName,
} from "./test-support.js";

/**
 * Strings made mostly of the characters that matter in keys (dots, separators, cases), often
 * after a prefix that some shape starts with, so that parsers see near misses, not only noise.
 */
const keyish = fc
  .tuple(
    fc.constantFrom("", "all.", "hello.", "edge.hello.", "hello.greeting.", "mesh.tools.edge."),
    fc.oneof(
      fc.string({ unit: fc.constantFrom(..."ab1-_.A"), maxLength: 20 }),
      fc.string({ maxLength: 20 }),
    ),
  )
  .map(([prefix, rest]) => prefix + rest);

/** What NATS accepts as a key-value key (nats.js kv: validKeyRe, no leading or trailing dot). */
const isKvKey = (key: string): boolean =>
  /^[-/=.\w]+$/.test(key) && !key.startsWith(".") && !key.endsWith(".");

/** One key shape: its builder and parser, keys written out, and keys the parser must refuse. */
interface KeyShapeSpec<P> {
  /** The name of the round-trip test; none for a shape whose round trip is tested elsewhere. */
  readonly builder?: string;
  readonly parts: fc.Arbitrary<P>;
  readonly build: (parts: P) => string;
  /** A named function: the refusal tests are named after it. */
  readonly parse: (key: string) => P;
  readonly examples?: readonly (readonly [P, string])[];
  readonly malformed?: readonly string[];
}

interface KeyShape {
  readonly builder: string | undefined;
  readonly parser: string;
  /** Built from good parts, a key is a valid KV key that parses back to those parts. */
  readonly roundTrip: () => void;
  /** parse then build again: a key that parses is the key its parts build. */
  readonly reparse: (key: string) => string;
  readonly malformed: readonly string[];
}

function keyShape<P>(spec: KeyShapeSpec<P>): KeyShape {
  return {
    builder: spec.builder,
    parser: spec.parse.name,
    malformed: spec.malformed ?? [],
    reparse: (key) => spec.build(spec.parse(key)),
    roundTrip: () => {
      for (const [parts, key] of spec.examples ?? []) assert.equal(spec.build(parts), key);
      fc.assert(
        fc.property(spec.parts, (parts) => {
          const key = spec.build(parts);
          assert.ok(isKvKey(key), key);
          // fc.record's objects have no prototype; a parsed key's parts are plain objects.
          assert.deepEqual(spec.parse(key), { ...parts });
        }),
      );
    },
  };
}

const configParts = fc.record({ module: moduleName, key: keyName });
const buildConfigKey = ({ module, key, node }: { module: string; key: string; node?: string }) =>
  keys.configKey(module, key, node);

const SHAPES: readonly KeyShape[] = [
  keyShape({
    builder: "nodeModuleKey",
    parts: fc.record({ node: nodeName, module: moduleName }),
    build: ({ node, module }) => keys.nodeModuleKey(node, module),
    parse: keys.parseNodeModuleKey,
    examples: [[{ node: "edge-01", module: "hello" }, "edge-01.hello"]],
    malformed: [
      "",
      ".",
      "edge",
      "edge.",
      ".hello",
      "edge..hello",
      "edge.hello.",
      "edge.hello.extra",
      "Edge.hello",
      "edge.Hello",
      "edge_1.hello",
      "all.hello",
      "edge.hello greet",
    ],
  }),
  keyShape({
    builder: "targetModuleKey",
    parts: fc.record({ target, module: moduleName }),
    build: ({ target, module }) => keys.targetModuleKey(target, module),
    parse: keys.parseTargetModuleKey,
    examples: [
      [{ target: { all: true }, module: "hello" }, "all.hello"],
      [{ target: { node: "edge-01" }, module: "hello" }, "edge-01.hello"],
    ],
    malformed: ["", "all", "all.", ".hello", "ALL.hello", "all.Hello", "all.hello.x", "a..b"],
  }),
  keyShape({
    builder: "candidateKey",
    parts: fc.record({ module: moduleName, seq }),
    build: ({ module, seq }) => keys.candidateKey(module, seq),
    parse: keys.parseCandidateKey,
    examples: [[{ module: "hello", seq: 1 }, "hello.1"]],
    malformed: [
      "",
      "hello",
      "hello.",
      ".1",
      "hello.0",
      "hello.01",
      "hello.-1",
      "hello.1.5",
      "hello.1e3",
      "hello.x",
      "hello.1.",
      "Hello.1",
      // regression: a seq beyond 2^53 parsed to a different number than the key says
      "hello.99999999999999999999",
    ],
  }),
  keyShape({
    builder: "buildKey",
    parts: fc.record({ module: moduleName, build: buildId }),
    build: ({ module, build }) => keys.buildKey(module, build),
    parse: keys.parseBuildKey,
    malformed: ["", "hello", "hello.", ".b1", "hello.B1", "hello.b_1", "hello.b.c", "hello..b"],
  }),
  keyShape({
    builder: "configKey without a node",
    parts: configParts,
    build: buildConfigKey,
    parse: keys.parseConfigKey,
    examples: [[{ module: "hello", key: "greeting" }, "hello.greeting"]],
    malformed: [
      "",
      "hello",
      "hello.",
      ".greeting",
      "hello.Greeting",
      "hello..edge",
      "hello.greeting.",
      "hello.greeting.all",
      "hello.greeting.Edge",
      "hello.greeting.edge.x",
      "hello.greeting..",
    ],
  }),
  keyShape({
    builder: "configKey with a node",
    parts: fc.record({ module: moduleName, key: keyName, node: nodeName }),
    build: buildConfigKey,
    parse: keys.parseConfigKey,
    examples: [[{ module: "hello", key: "greeting", node: "edge-01" }, "hello.greeting.edge-01"]],
  }),
  keyShape({
    builder: "secretKey",
    parts: fc.record({ module: moduleName, name: keyName }),
    build: ({ module, name }) => keys.secretKey(module, name),
    parse: keys.parseSecretKey,
    malformed: ["", "hello", "hello.", ".x", "hello.api.token", "hello.Api", "Hello.api"],
  }),
  // Its round trip is among the subjects' tests (layout.test.ts).
  keyShape({
    parts: fc.record({ node: nodeName, module: moduleName, tool: toolName }),
    build: ({ node, module, tool }) => toolSubject(node, module, tool),
    parse: parseToolSubject,
    malformed: [
      "",
      "mesh.tools",
      "mesh.tools.edge.hello",
      "mesh.tools.edge.hello.",
      "mesh.tools.edge..greet",
      "mesh.tools..hello.greet",
      "mesh.tools.edge.hello.greet.x",
      "mesh.tool.edge.hello.greet",
      "other.tools.edge.hello.greet",
      "mesh.tools.all.hello.greet",
      "mesh.tools.Edge.hello.greet",
      "mesh.tools.edge.hello.*",
      "mesh.tools.edge.hello.>",
    ],
  }),
];

describe("layout: keys round trip", () => {
  for (const shape of SHAPES)
    if (shape.builder !== undefined) test(shape.builder, () => shape.roundTrip());

  test("nodeKey and askKey are the name itself", () => {
    fc.assert(
      fc.property(nodeName, buildId, (node, id) => {
        assert.equal(keys.nodeKey(node), node);
        assert.equal(keys.askKey(id), id);
      }),
    );
  });
});

describe("layout: malformed keys", () => {
  // parseConfigKey is one parser for two builders: its malformed keys are tried once.
  const parsers = SHAPES.filter((s, i) => SHAPES.findIndex((t) => t.parser === s.parser) === i);
  for (const shape of parsers) {
    for (const key of shape.malformed) {
      test(`${shape.parser}(${JSON.stringify(key)}) is refused with INVALID_KEY`, () => {
        const error = refusal(() => shape.reparse(key), ErrorCode.INVALID_KEY);
        assert.equal(error.key, key);
      });
    }

    test(`${shape.parser}: a key either is refused with INVALID_KEY or is exactly the key its parts build`, () => {
      fc.assert(
        fc.property(keyish, (key) => {
          let rebuilt: string;
          try {
            rebuilt = shape.reparse(key);
          } catch (error) {
            assert.ok(isMeshError(error, ErrorCode.INVALID_KEY), String(error));
            return;
          }
          assert.equal(rebuilt, key);
        }),
      );
    });
  }

  test("key builders refuse bad names with INVALID_NAME", () => {
    refusal(() => keys.nodeModuleKey(ALL_NODES, "hello"), ErrorCode.INVALID_NAME);
    refusal(() => keys.nodeModuleKey("edge", "hello.x"), ErrorCode.INVALID_NAME);
    refusal(() => keys.targetModuleKey({ node: ALL_NODES }, "hello"), ErrorCode.INVALID_NAME);
    refusal(() => keys.buildKey("hello", "B1"), ErrorCode.INVALID_NAME);
    refusal(() => keys.configKey("hello", "greeting", ALL_NODES), ErrorCode.INVALID_NAME);
    refusal(() => keys.configKey("hello", "a.b"), ErrorCode.INVALID_NAME);
    refusal(() => keys.secretKey("hello", ""), ErrorCode.INVALID_NAME);
    refusal(() => keys.nodeKey(ALL_NODES), ErrorCode.INVALID_NAME);
    refusal(() => keys.askKey("A"), ErrorCode.INVALID_NAME);
  });

  for (const seq of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
    test(`candidateKey refuses seq ${seq} with INVALID_KEY`, () => {
      refusal(() => keys.candidateKey("hello", seq), ErrorCode.INVALID_KEY);
    });
  }
});

describe("layout: digests", () => {
  const digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

  test("digestKey takes a lowercase hex SHA-256 and refuses anything else with INVALID_KEY", () => {
    assert.equal(keys.digestKey(digest), digest);
    for (const bad of [
      "",
      digest.toUpperCase(),
      digest.slice(1),
      `${digest}0`,
      `sha256:${digest}`,
    ]) {
      assert.equal(refusal(() => keys.digestKey(bad), ErrorCode.INVALID_KEY).key, bad);
    }
  });
});
