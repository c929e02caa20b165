import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode, type MeshError, isMeshError } from "./errors.js";
import { refusal } from "./test-support.js";
import {
  ALL_NODES,
  ASK_ID_PATTERN,
  BUILD_ID_PATTERN,
  KEY_NAME_PATTERN,
  NAME_PATTERN,
  type NameKind,
  TOOL_NAME_PATTERN,
  checkModuleName,
  LANGUAGE_PATTERN,
  checkName,
  checkNodeName,
  isName,
  nameProblem,
} from "./names.js";

const PATTERN: Record<NameKind, RegExp> = {
  module: NAME_PATTERN,
  node: NAME_PATTERN,
  state: NAME_PATTERN,
  condition: NAME_PATTERN,
  bundle: NAME_PATTERN,
  process: NAME_PATTERN,
  tool: TOOL_NAME_PATTERN,
  "config key": KEY_NAME_PATTERN,
  secret: KEY_NAME_PATTERN,
  build: BUILD_ID_PATTERN,
  ask: ASK_ID_PATTERN,
  language: LANGUAGE_PATTERN,
};
const KINDS = Object.keys(PATTERN) as NameKind[];

/** The name a refusal suggests writing instead (its message ends `e.g. "…"`). */
function suggestion(error: MeshError): string | undefined {
  return /e\.g\. "([^"]*)"$/.exec(error.message)?.[1];
}

const name63 = "a" + "b".repeat(62);
const build64 = "1" + "b".repeat(63);

const TABLE: ReadonlyArray<{ kind: NameKind; good: string[]; bad: unknown[] }> = [
  {
    kind: "module",
    good: ["a", "hello", "hello-world", "node-tools", "x1", "a--b", "trailing-", name63],
    bad: ["", "Hello", "1hello", "-hello", "hello_world", "hello.world", "hello world", "héllo"],
  },
  {
    kind: "node",
    good: ["edge-01", "n", "all-nodes", "allx", name63],
    bad: [ALL_NODES, "ALL", "Edge", "edge.01", "edge_01", "01-edge", "", name63 + "c"],
  },
  {
    kind: "state",
    good: ["counts", "c-2"],
    bad: ["Counts", "counts_x", "counts.x", "", "9counts"],
  },
  {
    kind: "tool",
    good: ["greet", "get_value", "a_b-c", "x9"],
    bad: ["Greet", "_greet", "get.value", "1tool", "", "greet*", "greet>"],
  },
  {
    kind: "config key",
    good: ["greeting", "max_retries", "k-1"],
    bad: ["Greeting", "a.b", "", "_x", "-x", "a b"],
  },
  {
    kind: "secret",
    good: ["broker", "api-token", "db_password"],
    bad: ["Broker", "api.token", "", "a/b"],
  },
  {
    kind: "build",
    good: ["3-1f2e3d4c", "abc", "0", "9-x", build64],
    bad: ["", "-1", "A1", "a_b", "a.b", build64 + "c", "1 2"],
  },
  {
    kind: "ask",
    good: ["a-1f2e3d4c", "7"],
    bad: ["", "A", "a_b", "-a"],
  },
  {
    kind: "bundle",
    good: ["tools", "daemon-2"],
    bad: ["Tools", "tools_2", "2tools"],
  },
  {
    kind: "process",
    good: ["daemon"],
    bad: ["Daemon", "d.x", ""],
  },
];

describe("names: table", () => {
  for (const { kind, good, bad } of TABLE) {
    for (const value of good) {
      test(`${kind} ${JSON.stringify(value)} is accepted`, () => {
        assert.equal(nameProblem(kind, value), undefined);
        assert.equal(isName(kind, value), true);
        assert.equal(checkName(kind, value), value);
      });
    }
    for (const value of bad) {
      test(`${kind} ${JSON.stringify(value)} is refused with INVALID_NAME, quoting it and suggesting a good name`, () => {
        assert.equal(isName(kind, value), false);
        const error = refusal(() => checkName(kind, value), ErrorCode.INVALID_NAME);
        assert.ok(
          error.message.includes(JSON.stringify(value)),
          `the message quotes the value: ${error.message}`,
        );
        const suggested = suggestion(error);
        assert.ok(suggested !== undefined, `the message suggests a name: ${error.message}`);
        assert.equal(
          isName(kind, suggested),
          true,
          `the suggestion ${suggested} is a good ${kind} name`,
        );
      });
    }
  }

  test("names that are not strings are refused with INVALID_NAME", () => {
    for (const value of [undefined, null, 1, true, {}, ["hello"], 1n]) {
      const error = refusal(() => checkName("module", value), ErrorCode.INVALID_NAME);
      assert.equal(isName("module", suggestion(error)), true);
    }
  });

  test("a refusal of a value that JSON cannot show is still an INVALID_NAME (regression: bigint and cycles threw TypeError)", () => {
    const cycle: Record<string, unknown> = {};
    cycle["self"] = cycle;
    for (const value of [10n, cycle, Symbol("x"), () => "hello"]) {
      refusal(() => checkName("node", value), ErrorCode.INVALID_NAME);
    }
  });

  test("`all` is refused as a node or module name, and only as those", () => {
    const error = refusal(() => checkNodeName(ALL_NODES), ErrorCode.INVALID_NAME);
    assert.equal(error.node, ALL_NODES);
    assert.ok(error.message.includes(JSON.stringify(ALL_NODES)));
    const suggested = suggestion(error);
    assert.ok(suggested !== undefined && isName("node", suggested));
    const asModule = refusal(() => checkModuleName(ALL_NODES), ErrorCode.INVALID_NAME);
    assert.equal(asModule.module, ALL_NODES);
    for (const kind of KINDS.filter((k) => k !== "node" && k !== "module")) {
      assert.equal(isName(kind, ALL_NODES), true, `"all" is a good ${kind} name`);
    }
  });

  test("a refusal carries the module or node it is about", () => {
    assert.equal(refusal(() => checkModuleName("Hello"), ErrorCode.INVALID_NAME).module, "Hello");
    assert.equal(refusal(() => checkNodeName("Edge"), ErrorCode.INVALID_NAME).node, "Edge");
    const tool = refusal(() => checkName("tool", "Greet"), ErrorCode.INVALID_NAME);
    assert.equal(tool.module, undefined);
    assert.equal(tool.node, undefined);
  });
});

describe("names: properties", () => {
  for (const kind of KINDS) {
    const pattern = PATTERN[kind];

    test(`every string matching the ${kind} pattern is a good ${kind} name`, () => {
      fc.assert(
        fc.property(
          fc.stringMatching(pattern).filter((s) => !(kind === "node" && s === ALL_NODES)),
          (value) => {
            assert.equal(checkName(kind, value), value);
          },
        ),
      );
    });

    test(`the ${kind} rule accepts exactly the strings matching its pattern`, () => {
      const chars = fc.constantFrom(..."abz09-_.A *>/é\n");
      fc.assert(
        fc.property(fc.oneof(fc.string({ unit: chars }), fc.string()), (value) => {
          const expected = pattern.test(value) && !(kind === "node" && value === ALL_NODES);
          assert.equal(isName(kind, value), expected);
        }),
      );
    });

    test(`every refused ${kind} name gets INVALID_NAME and a suggestion that is a good ${kind} name`, () => {
      fc.assert(
        fc.property(
          fc.string({ maxLength: 100 }).filter((s) => !isName(kind, s)),
          (value) => {
            const error = refusal(() => checkName(kind, value), ErrorCode.INVALID_NAME);
            const suggested = suggestion(error);
            assert.ok(suggested !== undefined && isName(kind, suggested), error.message);
          },
        ),
      );
    });
  }

  test("checking any value either returns it as a good name or throws INVALID_NAME, never anything else", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...KINDS),
        fc.anything({ withBigInt: true, withMap: true, withSet: true, withDate: true }),
        (kind, value) => {
          try {
            assert.equal(checkName(kind, value), value);
          } catch (error) {
            assert.ok(isMeshError(error, ErrorCode.INVALID_NAME), String(error));
          }
        },
      ),
    );
  });
});
