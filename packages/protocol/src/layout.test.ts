import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "./errors.js";
import * as layout from "./layout.js";
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
    const buckets = Object.values(layout.Bucket).sort();
    assert.deepEqual(Object.keys(layout.BucketSpec).sort(), buckets);
    assert.deepEqual(Object.keys(BucketValue).sort(), buckets);
    for (const bucket of buckets) {
      assert.equal(typeof BucketValue[bucket].safeParse, "function", bucket);
      const { history } = layout.BucketSpec[bucket];
      // NATS keeps at most 64 values per key.
      assert.ok(Number.isInteger(history) && history >= 1 && history <= 64, bucket);
    }
  });

  test("mesh-have keeps history (set-back reads the last build that ran healthy)", () => {
    assert.ok(layout.BucketSpec[layout.Bucket.have].history > 1);
  });

  test("bucket, object store and stream names are valid NATS names and distinct", () => {
    const streams: string[] = [];
    for (const bucket of Object.values(layout.Bucket)) {
      assert.ok(isBucketName(bucket), bucket);
      streams.push(layout.kvStreamName(bucket));
    }
    for (const store of Object.values(layout.ObjectStore)) {
      assert.ok(isBucketName(store), store);
      streams.push(layout.objStreamName(store));
    }
    streams.push(...Object.values(layout.Stream));
    for (const stream of streams) assert.ok(isStreamName(stream), stream);
    assert.equal(new Set(streams).size, streams.length);
  });

  test("no mesh bucket reads as a module's state bucket", () => {
    for (const bucket of Object.values(layout.Bucket))
      assert.equal(layout.parseStateBucket(bucket), undefined);
  });

  test("every stream has a spec, and its subjects are under its own prefix", () => {
    assert.deepEqual(Object.keys(layout.StreamSpec).sort(), Object.values(layout.Stream).sort());
    const prefix: Record<layout.Stream, string> = {
      [layout.Stream.conditions]: layout.Subject.conditionsPrefix,
      [layout.Stream.logs]: layout.Subject.logsPrefix,
      [layout.Stream.keeps]: layout.Subject.keepsPrefix,
      [layout.Stream.toolStats]: layout.Subject.toolStatsPrefix,
    };
    for (const stream of Object.values(layout.Stream)) {
      for (const subject of layout.StreamSpec[stream].subjects) {
        assert.ok(isSubject(subject), subject);
        assert.ok(subject.startsWith(`${prefix[stream]}.`), `${stream}: ${subject}`);
      }
    }
  });

  test("state buckets built from good names are valid bucket names and parse back", () => {
    fc.assert(
      fc.property(moduleName, stateName, (module, state) => {
        const bucket = layout.stateBucket(module, state);
        assert.ok(isBucketName(bucket) && isStreamName(layout.kvStreamName(bucket)), bucket);
        assert.deepEqual(layout.parseStateBucket(bucket), { module, state });
      }),
    );
  });

  test("stateBucket refuses bad names with INVALID_NAME", () => {
    refusal(() => layout.stateBucket("Hello", "counts"), ErrorCode.INVALID_NAME);
    refusal(() => layout.stateBucket("hello", "counts_x"), ErrorCode.INVALID_NAME);
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
      assert.equal(layout.parseStateBucket(bucket), undefined);
    });
  }
});

describe("layout: subjects", () => {
  test("every subject built from good names has no empty token", () => {
    fc.assert(
      fc.property(nodeName, moduleName, toolName, stateName, (node, module, tool, state) => {
        const subjects = [
          layout.toolSubject(node, module, tool),
          layout.moduleToolsWildcard(node, module),
          layout.provisionSubject(node),
          layout.provisionChangedSubject(node),
          layout.conditionSubject(module, state),
          layout.moduleConditionsWildcard(module),
          layout.keepsSubject(node, module),
          layout.logsSubject(node, module),
          layout.inboxPrefix(node, module),
          layout.Subject.join,
        ];
        for (const subject of subjects) assert.ok(isSubject(subject), subject);
      }),
    );
  });

  test("inboxPrefix is _INBOX.<node>.<module>", () => {
    assert.equal(layout.inboxPrefix("edge-01", "hello"), "_INBOX.edge-01.hello");
    fc.assert(
      fc.property(nodeName, moduleName, (node, module) => {
        assert.equal(layout.inboxPrefix(node, module), `_INBOX.${node}.${module}`);
      }),
    );
  });

  test("every principal's inbox can be built (a principal's name is a good module name)", () => {
    for (const principal of Object.values(layout.Principal)) {
      assert.ok(isName("module", principal), principal);
      assert.ok(layout.RESERVED_MODULE_NAMES.has(principal));
      assert.equal(layout.inboxPrefix("edge-01", principal), `_INBOX.edge-01.${principal}`);
    }
  });

  test("toolSubject parses back to its parts, and the module's wildcard covers it", () => {
    assert.equal(layout.toolSubject("edge-01", "hello", "greet"), "mesh.tools.edge-01.hello.greet");
    fc.assert(
      fc.property(nodeName, moduleName, toolName, (node, module, tool) => {
        const subject = layout.toolSubject(node, module, tool);
        assert.deepEqual(layout.parseToolSubject(subject), { node, module, tool });
        assert.ok(covers(layout.moduleToolsWildcard(node, module), subject));
      }),
    );
  });

  test("each stream captures its own subjects, and no stream captures a request subject", () => {
    const captures = (subject: string): layout.Stream[] =>
      Object.values(layout.Stream).filter((s) =>
        layout.StreamSpec[s].subjects.some((p) => covers(p, subject)),
      );
    fc.assert(
      fc.property(nodeName, moduleName, toolName, stateName, (node, module, tool, state) => {
        assert.deepEqual(captures(layout.conditionSubject(module, state)), [
          layout.Stream.conditions,
        ]);
        assert.deepEqual(captures(layout.logsSubject(node, module)), [layout.Stream.logs]);
        assert.deepEqual(captures(layout.keepsSubject(node, module)), [layout.Stream.keeps]);
        assert.deepEqual(captures(layout.toolStatsSubject(node, module)), [
          layout.Stream.toolStats,
        ]);
        // A stream over a request subject would answer requests with a JetStream ack.
        for (const request of [
          layout.toolSubject(node, module, tool),
          layout.provisionSubject(node),
          layout.provisionChangedSubject(node),
          layout.inboxPrefix(node, module) + ".x",
          layout.Subject.join,
        ]) {
          assert.deepEqual(captures(request), [], request);
        }
      }),
    );
  });

  test("subject builders refuse bad names with INVALID_NAME", () => {
    refusal(() => layout.toolSubject(ALL_NODES, "hello", "greet"), ErrorCode.INVALID_NAME);
    refusal(() => layout.toolSubject("edge", "hello", "greet.x"), ErrorCode.INVALID_NAME);
    refusal(() => layout.toolSubject("edge", "hello", "*"), ErrorCode.INVALID_NAME);
    refusal(() => layout.inboxPrefix(ALL_NODES, "hello"), ErrorCode.INVALID_NAME);
    refusal(() => layout.inboxPrefix("edge", ">"), ErrorCode.INVALID_NAME);
    refusal(() => layout.provisionSubject(""), ErrorCode.INVALID_NAME);
    refusal(() => layout.conditionSubject("hello", "a.b"), ErrorCode.INVALID_NAME);
    refusal(() => layout.logsSubject("edge", "Hello"), ErrorCode.INVALID_NAME);
  });
});

describe("layout: resource ids and paths", () => {
  test("resource ids name their module", () => {
    assert.equal(layout.bundleResourceId("hello", "tools"), "hello.bundle-tools");
    assert.equal(layout.needResourceId("hello", "broker"), "hello.need-broker");
    assert.equal(layout.processResourceId("hello", "daemon"), "hello.process-daemon");
    assert.equal(layout.resourceModule(layout.RUNTIME_PROCESS_ID), layout.RUNTIME_MODULE);
    fc.assert(
      fc.property(moduleName, stateName, keyName, (module, name, secret) => {
        assert.equal(layout.resourceModule(layout.bundleResourceId(module, name)), module);
        assert.equal(layout.resourceModule(layout.needResourceId(module, secret)), module);
        assert.equal(layout.resourceModule(layout.processResourceId(module, name)), module);
      }),
    );
  });

  for (const id of ["", "hello", "hellox", ".bundle-tools", "hello.", "Hello.bundle-tools"]) {
    // regression: an id without a dot gave all but its last character as the module
    test(`resourceModule(${JSON.stringify(id)}) is refused with INVALID_KEY`, () => {
      refusal(() => layout.resourceModule(id), ErrorCode.INVALID_KEY);
    });
  }

  test("bundlePath is <root>/bundles/<module>/<bundle>", () => {
    assert.equal(
      layout.bundlePath(layout.DEFAULT_NODE_ROOT, "hello", "tools"),
      "/var/lib/mesh/bundles/hello/tools",
    );
    assert.equal(
      layout.bundlePath("/tmp/mesh//", "hello", "tools"),
      "/tmp/mesh/bundles/hello/tools",
    );
    refusal(() => layout.bundlePath("/tmp", "hello", "../x"), ErrorCode.INVALID_NAME);
    refusal(() => layout.bundlePath("/tmp", "..", "tools"), ErrorCode.INVALID_NAME);
  });
});
