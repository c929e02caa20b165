import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode, type MeshError, isMeshError } from "./errors.js";
import {
  Bucket,
  BucketSpec,
  DEFAULT_NODE_ROOT,
  ObjectStore,
  Principal,
  RESERVED_MODULE_NAMES,
  RUNTIME_MODULE,
  RUNTIME_PROCESS_ID,
  Stream,
  StreamSpec,
  Subject,
  type Target,
  askKey,
  buildKey,
  bundlePath,
  bundleResourceId,
  candidateKey,
  conditionSubject,
  configKey,
  digestKey,
  inboxPrefix,
  keepsSubject,
  kvStreamName,
  logsSubject,
  moduleConditionsWildcard,
  moduleToolsWildcard,
  needResourceId,
  nodeKey,
  nodeModuleKey,
  objStreamName,
  parseBuildKey,
  parseCandidateKey,
  parseConfigKey,
  parseNodeModuleKey,
  parseSecretKey,
  parseStateBucket,
  parseTargetModuleKey,
  parseToolSubject,
  processResourceId,
  provisionChangedSubject,
  provisionSubject,
  resourceModule,
  secretKey,
  stateBucket,
  targetModuleKey,
  toolSubject,
} from "./layout.js";
import {
  ALL_NODES,
  BUILD_ID_PATTERN,
  KEY_NAME_PATTERN,
  NAME_PATTERN,
  TOOL_NAME_PATTERN,
  isName,
} from "./names.js";
import { BucketValue } from "./values.js";

/** The refusal `fn` throws: a MeshError with `code`. */
function refusal(fn: () => unknown, code: ErrorCode): MeshError {
  try {
    fn();
  } catch (error) {
    assert.ok(isMeshError(error), `expected a MeshError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected a ${code} refusal, but nothing was thrown`);
}

// Good names, as the rules of names.ts define them.
const moduleName = fc.stringMatching(NAME_PATTERN);
const nodeName = fc.stringMatching(NAME_PATTERN).filter((n) => n !== ALL_NODES);
const stateName = fc.stringMatching(NAME_PATTERN);
const toolName = fc.stringMatching(TOOL_NAME_PATTERN);
const keyName = fc.stringMatching(KEY_NAME_PATTERN);
const buildId = fc.stringMatching(BUILD_ID_PATTERN);
const seq = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
const target: fc.Arbitrary<Target> = fc.oneof(
  nodeName.map((node) => ({ node })),
  fc.constant({ all: true as const }),
);
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
/** What NATS accepts as a KV bucket or object store name (nats.js validBucketRe). */
const isBucketName = (name: string): boolean => /^[-\w]+$/.test(name);
/** What JetStream accepts as a stream name (nats.js validateStreamName). */
const isStreamName = (name: string): boolean =>
  name.length > 0 &&
  ![".", "*", ">", "/", "\\", " ", "\t", "\n", "\r"].some((c) => name.includes(c));
/** A subject with no empty token and no whitespace. */
const isSubject = (subject: string): boolean =>
  !/\s/.test(subject) && subject.split(".").every((token) => token.length > 0);
/** Whether a subscription (or stream) subject `pattern` covers `subject`. */
function covers(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (const [i, token] of p.entries()) {
    if (token === ">") return s.length > i;
    if (i >= s.length || (token !== "*" && token !== s[i])) return false;
  }
  return p.length === s.length;
}

describe("layout: buckets and streams", () => {
  test("every bucket has a BucketSpec and a BucketValue schema, and nothing else does", () => {
    const buckets = Object.values(Bucket).sort();
    assert.deepEqual(Object.keys(BucketSpec).sort(), buckets);
    assert.deepEqual(Object.keys(BucketValue).sort(), buckets);
    for (const bucket of buckets) {
      assert.equal(typeof BucketValue[bucket].safeParse, "function", bucket);
      const { history } = BucketSpec[bucket];
      // NATS keeps at most 64 values per key.
      assert.ok(Number.isInteger(history) && history >= 1 && history <= 64, bucket);
    }
  });

  test("mesh-have keeps history (set-back reads the last build that ran healthy)", () => {
    assert.ok(BucketSpec[Bucket.have].history > 1);
  });

  test("bucket, object store and stream names are valid NATS names and distinct", () => {
    const streams: string[] = [];
    for (const bucket of Object.values(Bucket)) {
      assert.ok(isBucketName(bucket), bucket);
      streams.push(kvStreamName(bucket));
    }
    for (const store of Object.values(ObjectStore)) {
      assert.ok(isBucketName(store), store);
      streams.push(objStreamName(store));
    }
    streams.push(...Object.values(Stream));
    for (const stream of streams) assert.ok(isStreamName(stream), stream);
    assert.equal(new Set(streams).size, streams.length);
  });

  test("no mesh bucket reads as a module's state bucket", () => {
    for (const bucket of Object.values(Bucket)) assert.equal(parseStateBucket(bucket), undefined);
  });

  test("every stream has a spec, and its subjects are under its own prefix", () => {
    assert.deepEqual(Object.keys(StreamSpec).sort(), Object.values(Stream).sort());
    const prefix: Record<Stream, string> = {
      [Stream.conditions]: Subject.conditionsPrefix,
      [Stream.logs]: Subject.logsPrefix,
      [Stream.keeps]: Subject.keepsPrefix,
    };
    for (const stream of Object.values(Stream)) {
      for (const subject of StreamSpec[stream].subjects) {
        assert.ok(isSubject(subject), subject);
        assert.ok(subject.startsWith(`${prefix[stream]}.`), `${stream}: ${subject}`);
      }
    }
  });

  test("state buckets built from good names are valid bucket names and parse back", () => {
    fc.assert(
      fc.property(moduleName, stateName, (module, state) => {
        const bucket = stateBucket(module, state);
        assert.ok(isBucketName(bucket) && isStreamName(kvStreamName(bucket)), bucket);
        assert.deepEqual(parseStateBucket(bucket), { module, state });
      }),
    );
  });

  test("stateBucket refuses bad names with INVALID_NAME", () => {
    refusal(() => stateBucket("Hello", "counts"), ErrorCode.INVALID_NAME);
    refusal(() => stateBucket("hello", "counts_x"), ErrorCode.INVALID_NAME);
  });

  for (const bucket of [
    "",
    "hello",
    "_counts",
    "hello_",
    "hello_counts_x",
    "Hello_counts",
    "hello_Counts",
    "hello.x_counts",
    "hello-counts",
  ]) {
    test(`parseStateBucket(${JSON.stringify(bucket)}) is not a state bucket`, () => {
      assert.equal(parseStateBucket(bucket), undefined);
    });
  }
});

describe("layout: subjects", () => {
  test("every subject built from good names has no empty token", () => {
    fc.assert(
      fc.property(nodeName, moduleName, toolName, stateName, (node, module, tool, state) => {
        const subjects = [
          toolSubject(node, module, tool),
          moduleToolsWildcard(node, module),
          provisionSubject(node),
          provisionChangedSubject(node),
          conditionSubject(module, state),
          moduleConditionsWildcard(module),
          keepsSubject(node, module),
          logsSubject(node, module),
          inboxPrefix(node, module),
          Subject.join,
        ];
        for (const subject of subjects) assert.ok(isSubject(subject), subject);
      }),
    );
  });

  test("inboxPrefix is _INBOX.<node>.<module>", () => {
    assert.equal(inboxPrefix("edge-01", "hello"), "_INBOX.edge-01.hello");
    fc.assert(
      fc.property(nodeName, moduleName, (node, module) => {
        assert.equal(inboxPrefix(node, module), `_INBOX.${node}.${module}`);
      }),
    );
  });

  test("every principal's inbox can be built (a principal's name is a good module name)", () => {
    for (const principal of Object.values(Principal)) {
      assert.ok(isName("module", principal), principal);
      assert.ok(RESERVED_MODULE_NAMES.has(principal));
      assert.equal(inboxPrefix("edge-01", principal), `_INBOX.edge-01.${principal}`);
    }
  });

  test("toolSubject parses back to its parts, and the module's wildcard covers it", () => {
    assert.equal(toolSubject("edge-01", "hello", "greet"), "mesh.tools.edge-01.hello.greet");
    fc.assert(
      fc.property(nodeName, moduleName, toolName, (node, module, tool) => {
        const subject = toolSubject(node, module, tool);
        assert.deepEqual(parseToolSubject(subject), { node, module, tool });
        assert.ok(covers(moduleToolsWildcard(node, module), subject));
      }),
    );
  });

  test("each stream captures its own subjects, and no stream captures a request subject", () => {
    const captures = (subject: string): Stream[] =>
      Object.values(Stream).filter((s) => StreamSpec[s].subjects.some((p) => covers(p, subject)));
    fc.assert(
      fc.property(nodeName, moduleName, toolName, stateName, (node, module, tool, state) => {
        assert.deepEqual(captures(conditionSubject(module, state)), [Stream.conditions]);
        assert.deepEqual(captures(logsSubject(node, module)), [Stream.logs]);
        assert.deepEqual(captures(keepsSubject(node, module)), [Stream.keeps]);
        // A stream over a request subject would answer requests with a JetStream ack.
        for (const request of [
          toolSubject(node, module, tool),
          provisionSubject(node),
          provisionChangedSubject(node),
          inboxPrefix(node, module) + ".x",
          Subject.join,
        ]) {
          assert.deepEqual(captures(request), [], request);
        }
      }),
    );
  });

  test("subject builders refuse bad names with INVALID_NAME", () => {
    refusal(() => toolSubject(ALL_NODES, "hello", "greet"), ErrorCode.INVALID_NAME);
    refusal(() => toolSubject("edge", "hello", "greet.x"), ErrorCode.INVALID_NAME);
    refusal(() => toolSubject("edge", "hello", "*"), ErrorCode.INVALID_NAME);
    refusal(() => inboxPrefix(ALL_NODES, "hello"), ErrorCode.INVALID_NAME);
    refusal(() => inboxPrefix("edge", ">"), ErrorCode.INVALID_NAME);
    refusal(() => provisionSubject(""), ErrorCode.INVALID_NAME);
    refusal(() => conditionSubject("hello", "a.b"), ErrorCode.INVALID_NAME);
    refusal(() => logsSubject("edge", "Hello"), ErrorCode.INVALID_NAME);
  });
});

describe("layout: keys round trip", () => {
  test("nodeModuleKey", () => {
    assert.equal(nodeModuleKey("edge-01", "hello"), "edge-01.hello");
    fc.assert(
      fc.property(nodeName, moduleName, (node, module) => {
        const key = nodeModuleKey(node, module);
        assert.ok(isKvKey(key), key);
        assert.deepEqual(parseNodeModuleKey(key), { node, module });
      }),
    );
  });

  test("targetModuleKey", () => {
    assert.equal(targetModuleKey({ all: true }, "hello"), "all.hello");
    assert.equal(targetModuleKey({ node: "edge-01" }, "hello"), "edge-01.hello");
    fc.assert(
      fc.property(target, moduleName, (target, module) => {
        const key = targetModuleKey(target, module);
        assert.ok(isKvKey(key), key);
        assert.deepEqual(parseTargetModuleKey(key), { target, module });
      }),
    );
  });

  test("candidateKey", () => {
    assert.equal(candidateKey("hello", 1), "hello.1");
    fc.assert(
      fc.property(moduleName, seq, (module, seq) => {
        const key = candidateKey(module, seq);
        assert.ok(isKvKey(key), key);
        assert.deepEqual(parseCandidateKey(key), { module, seq });
      }),
    );
  });

  test("buildKey", () => {
    fc.assert(
      fc.property(moduleName, buildId, (module, build) => {
        const key = buildKey(module, build);
        assert.ok(isKvKey(key), key);
        assert.deepEqual(parseBuildKey(key), { module, build });
      }),
    );
  });

  test("configKey without a node", () => {
    assert.equal(configKey("hello", "greeting"), "hello.greeting");
    fc.assert(
      fc.property(moduleName, keyName, (module, key) => {
        const built = configKey(module, key);
        assert.ok(isKvKey(built), built);
        assert.deepEqual(parseConfigKey(built), { module, key });
      }),
    );
  });

  test("configKey with a node", () => {
    assert.equal(configKey("hello", "greeting", "edge-01"), "hello.greeting.edge-01");
    fc.assert(
      fc.property(moduleName, keyName, nodeName, (module, key, node) => {
        const built = configKey(module, key, node);
        assert.ok(isKvKey(built), built);
        assert.deepEqual(parseConfigKey(built), { module, key, node });
      }),
    );
  });

  test("secretKey", () => {
    fc.assert(
      fc.property(moduleName, keyName, (module, name) => {
        const key = secretKey(module, name);
        assert.ok(isKvKey(key), key);
        assert.deepEqual(parseSecretKey(key), { module, name });
      }),
    );
  });

  test("nodeKey and askKey are the name itself", () => {
    fc.assert(
      fc.property(nodeName, buildId, (node, id) => {
        assert.equal(nodeKey(node), node);
        assert.equal(askKey(id), id);
      }),
    );
  });
});

/** A parser, the builder that must give the same key back, and keys it must refuse. */
interface KeyShape {
  readonly name: string;
  /** parse then build again: a key that parses is the key its parts build. */
  readonly reparse: (key: string) => string;
  readonly malformed: readonly string[];
}

const SHAPES: readonly KeyShape[] = [
  {
    name: "parseNodeModuleKey",
    reparse: (key) => {
      const { node, module } = parseNodeModuleKey(key);
      return nodeModuleKey(node, module);
    },
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
  },
  {
    name: "parseTargetModuleKey",
    reparse: (key) => {
      const { target, module } = parseTargetModuleKey(key);
      return targetModuleKey(target, module);
    },
    malformed: ["", "all", "all.", ".hello", "ALL.hello", "all.Hello", "all.hello.x", "a..b"],
  },
  {
    name: "parseCandidateKey",
    reparse: (key) => {
      const { module, seq } = parseCandidateKey(key);
      return candidateKey(module, seq);
    },
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
  },
  {
    name: "parseBuildKey",
    reparse: (key) => {
      const { module, build } = parseBuildKey(key);
      return buildKey(module, build);
    },
    malformed: ["", "hello", "hello.", ".b1", "hello.B1", "hello.b_1", "hello.b.c", "hello..b"],
  },
  {
    name: "parseConfigKey",
    reparse: (key) => {
      const { module, key: name, node } = parseConfigKey(key);
      return configKey(module, name, node);
    },
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
  },
  {
    name: "parseSecretKey",
    reparse: (key) => {
      const { module, name } = parseSecretKey(key);
      return secretKey(module, name);
    },
    malformed: ["", "hello", "hello.", ".x", "hello.api.token", "hello.Api", "Hello.api"],
  },
  {
    name: "parseToolSubject",
    reparse: (subject) => {
      const { node, module, tool } = parseToolSubject(subject);
      return toolSubject(node, module, tool);
    },
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
  },
];

describe("layout: malformed keys", () => {
  for (const shape of SHAPES) {
    for (const key of shape.malformed) {
      test(`${shape.name}(${JSON.stringify(key)}) is refused with INVALID_KEY`, () => {
        const error = refusal(() => shape.reparse(key), ErrorCode.INVALID_KEY);
        assert.equal(error.key, key);
      });
    }

    test(`${shape.name}: a key either is refused with INVALID_KEY or is exactly the key its parts build`, () => {
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
    refusal(() => nodeModuleKey(ALL_NODES, "hello"), ErrorCode.INVALID_NAME);
    refusal(() => nodeModuleKey("edge", "hello.x"), ErrorCode.INVALID_NAME);
    refusal(() => targetModuleKey({ node: ALL_NODES }, "hello"), ErrorCode.INVALID_NAME);
    refusal(() => buildKey("hello", "B1"), ErrorCode.INVALID_NAME);
    refusal(() => configKey("hello", "greeting", ALL_NODES), ErrorCode.INVALID_NAME);
    refusal(() => configKey("hello", "a.b"), ErrorCode.INVALID_NAME);
    refusal(() => secretKey("hello", ""), ErrorCode.INVALID_NAME);
    refusal(() => nodeKey(ALL_NODES), ErrorCode.INVALID_NAME);
    refusal(() => askKey("A"), ErrorCode.INVALID_NAME);
  });

  for (const seq of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
    test(`candidateKey refuses seq ${seq} with INVALID_KEY`, () => {
      refusal(() => candidateKey("hello", seq), ErrorCode.INVALID_KEY);
    });
  }
});

describe("layout: digests, resource ids and paths", () => {
  const digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

  test("digestKey takes a lowercase hex SHA-256 and refuses anything else with INVALID_KEY", () => {
    assert.equal(digestKey(digest), digest);
    for (const bad of [
      "",
      digest.toUpperCase(),
      digest.slice(1),
      `${digest}0`,
      `sha256:${digest}`,
    ]) {
      assert.equal(refusal(() => digestKey(bad), ErrorCode.INVALID_KEY).key, bad);
    }
  });

  test("resource ids name their module", () => {
    assert.equal(bundleResourceId("hello", "tools"), "hello.bundle-tools");
    assert.equal(needResourceId("hello", "broker"), "hello.need-broker");
    assert.equal(processResourceId("hello", "daemon"), "hello.process-daemon");
    assert.equal(resourceModule(RUNTIME_PROCESS_ID), RUNTIME_MODULE);
    fc.assert(
      fc.property(moduleName, stateName, keyName, (module, name, secret) => {
        assert.equal(resourceModule(bundleResourceId(module, name)), module);
        assert.equal(resourceModule(needResourceId(module, secret)), module);
        assert.equal(resourceModule(processResourceId(module, name)), module);
      }),
    );
  });

  for (const id of ["", "hello", "hellox", ".bundle-tools", "hello.", "Hello.bundle-tools"]) {
    // regression: an id without a dot gave all but its last character as the module
    test(`resourceModule(${JSON.stringify(id)}) is refused with INVALID_KEY`, () => {
      refusal(() => resourceModule(id), ErrorCode.INVALID_KEY);
    });
  }

  test("bundlePath is <root>/bundles/<module>/<bundle>", () => {
    assert.equal(
      bundlePath(DEFAULT_NODE_ROOT, "hello", "tools"),
      "/var/lib/mesh/bundles/hello/tools",
    );
    assert.equal(bundlePath("/tmp/mesh//", "hello", "tools"), "/tmp/mesh/bundles/hello/tools");
    refusal(() => bundlePath("/tmp", "hello", "../x"), ErrorCode.INVALID_NAME);
    refusal(() => bundlePath("/tmp", "..", "tools"), ErrorCode.INVALID_NAME);
  });
});
