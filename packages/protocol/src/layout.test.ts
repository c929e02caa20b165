import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "./errors.js";
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
  bundlePath,
  bundleResourceId,
  conditionSubject,
  inboxPrefix,
  keepsSubject,
  kvStreamName,
  logsSubject,
  moduleConditionsWildcard,
  moduleToolsWildcard,
  needResourceId,
  objStreamName,
  parseStateBucket,
  parseToolSubject,
  processResourceId,
  provisionChangedSubject,
  provisionSubject,
  resourceModule,
  stateBucket,
  toolSubject,
  toolStatsSubject,
} from "./layout.js";
import { ALL_NODES, isName } from "./names.js";
import { keyName, moduleName, nodeName, refusal, stateName, toolName } from "./test-support.js";
import { BucketValue } from "./bucket-value.js";

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
      [Stream.toolStats]: Subject.toolStatsPrefix,
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
        assert.deepEqual(captures(toolStatsSubject(node, module)), [Stream.toolStats]);
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

describe("layout: resource ids and paths", () => {
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
