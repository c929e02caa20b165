import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ErrorCode, Manifest, type ManifestInput, isMeshError } from "@mesh/protocol";
import {
  ReadRefusal,
  isAllowed,
  moduleGrant,
  runtimeGrant,
  subjectMatches,
} from "./permissions.js";
import { assertPublish, assertSubscribe, can, hears, kv } from "./permissions/test-support.js";

const manifest = (input: ManifestInput): Manifest => Manifest.parse(input);

const tools: NonNullable<ManifestInput["bundles"]>[number] = {
  name: "tools",
  language: "typescript",
  entrypoints: ["src/tools.ts"],
  loads: ["src/tools.ts"],
};

const counter = manifest({
  module: "counter",
  bundles: [tools],
  states: [
    { name: "counts", readable: true },
    { name: "secret", readable: false },
  ],
});
const board = manifest({
  module: "board",
  bundles: [tools],
  states: [{ name: "layout" }],
  reads: ["counter/counts"],
  calls: ["hello/greet"],
});
const owners = { counter, board };

describe("subjectMatches mirrors the server's sublist", () => {
  const cases: [string, string, boolean][] = [
    ["a.b", "a.b", true],
    ["a.*", "a.b", true],
    ["a.*", "a.b.c", false],
    ["a.>", "a", false],
    ["a.>", "a.b.c", true],
    ["a.b", "a.*", false],
    // The subject's tokens are literal: a `*` in the pattern takes a literal `>` (verified).
    ["a.*", "a.>", true],
    ["a.*.*", "a.*.>", true],
    ["a.n1", "a.>", false],
  ];
  for (const [pattern, subject, expected] of cases) {
    test(`${pattern} ${expected ? "matches" : "does not match"} ${subject}`, () => {
      assert.equal(subjectMatches(pattern, subject), expected);
    });
  }

  test("an empty allow list allows everything, as the server does", () => {
    assert.equal(isAllowed({ publish: { allow: [] }, subscribe: {} }, "publish", "anything"), true);
    assert.equal(
      isAllowed({ publish: { deny: [">"] }, subscribe: {} }, "publish", "anything"),
      false,
    );
  });
});

describe("moduleGrant", () => {
  const { permissions: p, problems } = moduleGrant({ node: "n1", manifest: board, owners });

  test("its own states: get (also through the leader), watch, keys, flow control and write", () => {
    const bucket = "board_layout";
    assertPublish(p, {
      allowed: [...kv.reads(bucket, "x"), kv.msgGet(bucket), kv.put(bucket, "x")],
    });
  });

  test("a readable state it reads: read only", () => {
    const bucket = "counter_counts";
    assertPublish(p, {
      allowed: [...kv.reads(bucket, "a.b"), kv.watch(bucket, "a.*")],
      refused: [kv.put(bucket, "a")],
    });
  });

  test("no get path that reads around the per-key grant", () => {
    assert.equal(can(p, kv.msgGet("counter_counts")), false);
    assert.equal(can(p, kv.getByRevision("counter_counts")), false);
  });

  test("nothing of a state it does not read, nor of a mesh bucket", () => {
    for (const bucket of ["counter_secret", "mesh-composed", "mesh-config"]) {
      assert.equal(can(p, kv.get(bucket, "x")), false, bucket);
      assert.equal(can(p, kv.watch(bucket)), false, bucket);
    }
  });

  test("calls the tools it declares on any node, and discovers that service only", () => {
    assert.ok(can(p, "mesh.tools.n1.hello.greet"));
    assert.ok(can(p, "mesh.tools.n7.hello.greet"));
    assert.ok(can(p, "$SRV.INFO.hello"));
    assert.ok(can(p, "$SRV.PING.hello"));
    assert.equal(can(p, "mesh.tools.n1.hello.other"), false);
    assert.equal(can(p, "mesh.tools.n1.counter.greet"), false);
    assert.equal(can(p, "$SRV.INFO"), false);
    assert.equal(can(p, "$SRV.INFO.counter"), false);
  });

  test("its conditions, its keeps, its inbox; never another's", () => {
    assert.ok(can(p, "mesh.conditions.board.stale"));
    assert.equal(can(p, "mesh.conditions.counter.stale"), false);
    assert.ok(can(p, "mesh.keeps.n1.board"));
    assert.equal(can(p, "mesh.keeps.n2.board"), false);
    assert.ok(hears(p, "_INBOX.n1.board.abc.1"));
    assert.equal(hears(p, "_INBOX.n1.counter.abc.1"), false);
    assert.equal(hears(p, "_INBOX.n1.board"), false);
  });

  test("serves nothing: tools are the runtime's", () => {
    assert.equal(hears(p, "mesh.tools.n1.board.x"), false);
    assert.equal(p.allowResponses, undefined);
  });

  test("exactly this list (the broker's users file depends on it)", () => {
    assert.deepEqual(problems, []);
    assert.deepEqual(p, {
      publish: {
        allow: [
          "$JS.API.CONSUMER.CREATE.KV_board_layout.*.$KV.board_layout.>",
          "$JS.API.CONSUMER.CREATE.KV_counter_counts.*.$KV.counter_counts.>",
          "$JS.API.CONSUMER.INFO.KV_board_layout.*",
          "$JS.API.CONSUMER.INFO.KV_counter_counts.*",
          "$JS.API.DIRECT.GET.KV_board_layout.$KV.board_layout.>",
          "$JS.API.DIRECT.GET.KV_counter_counts.$KV.counter_counts.>",
          "$JS.API.STREAM.MSG.GET.KV_board_layout",
          "$JS.FC.KV_board_layout.>",
          "$JS.FC.KV_counter_counts.>",
          "$KV.board_layout.>",
          "$SRV.INFO.hello",
          "$SRV.PING.hello",
          "mesh.conditions.board.*",
          "mesh.keeps.n1.board",
          "mesh.provision.n1.module.board",
          "mesh.tools.*.hello.greet",
        ],
      },
      subscribe: { allow: ["_INBOX.n1.board.>", "mesh.provision.n1.changed.board"] },
    });
  });

  const refusals: [string, string, ReadRefusal][] = [
    ["a state the owner keeps unreadable", "counter/secret", ReadRefusal.notReadable],
    ["a state the owner does not declare", "counter/nope", ReadRefusal.unknownState],
    ["a module nobody knows", "ghost/counts", ReadRefusal.unknownModule],
  ];
  for (const [what, read, reason] of refusals) {
    test(`a read of ${what} grants nothing and says so`, () => {
      const reader = manifest({ module: "reader", reads: [read] });
      const { permissions, problems } = moduleGrant({ node: "n1", manifest: reader, owners });
      assert.deepEqual(
        problems.map((p) => ({ module: p.module, read: p.read, reason: p.reason })),
        [{ module: "reader", read, reason }],
      );
      assert.ok(problems[0]?.message.includes(read));
      const [owner, state] = read.split("/") as [string, string];
      assert.ok(!JSON.stringify(permissions).includes(`${owner}_${state}`));
    });
  }

  test("owners may be a Map, states or keeps; a module named constructor is no special key", () => {
    const reader = manifest({ module: "reader", reads: ["counter/counts", "constructor/x"] });
    const asMap = moduleGrant({
      node: "n1",
      manifest: reader,
      owners: new Map([["counter", counter.states]]),
    });
    const asRecord = moduleGrant({
      node: "n1",
      manifest: reader,
      owners: { counter: { states: counter.states } },
    });
    assert.deepEqual(asMap, asRecord);
    assert.deepEqual(
      asMap.problems.map((p) => p.reason),
      [ReadRefusal.unknownModule],
    );
  });

  test("a read of its own state needs no owner", () => {
    const self = manifest({ module: "self", states: [{ name: "s" }], reads: ["self/s"] });
    assert.deepEqual(moduleGrant({ node: "n1", manifest: self, owners: {} }).problems, []);
  });

  test("a module with nothing declared still has a list on each side", () => {
    const { permissions } = moduleGrant({
      node: "n1",
      manifest: manifest({ module: "bare" }),
      owners: {},
    });
    assert.deepEqual(permissions, {
      publish: {
        allow: ["mesh.conditions.bare.*", "mesh.keeps.n1.bare", "mesh.provision.n1.module.bare"],
      },
      subscribe: { allow: ["_INBOX.n1.bare.>", "mesh.provision.n1.changed.bare"] },
    });
  });

  for (const name of ["host", "controller", "operator", "assigner", "delivery", "node-tools"]) {
    test(`refuses a module named ${name}: it would share a principal's inbox`, () => {
      assert.throws(
        () => moduleGrant({ node: "n1", manifest: manifest({ module: name }), owners: {} }),
        (e) => isMeshError(e, ErrorCode.INVALID_NAME),
      );
    });
  }

  test("refuses a node that is not a name", () => {
    assert.throws(
      () => moduleGrant({ node: "all", manifest: board, owners }),
      (e) => isMeshError(e, ErrorCode.INVALID_NAME),
    );
  });
});

describe("moduleGrant of a module whose process serves its tools (decision 0161)", () => {
  const daemon = (language: string) =>
    manifest({
      module: "snake",
      bundles: [{ name: "app", language, entrypoints: ["main.py"] }],
      processes: [{ name: "main", bundle: "app" }],
    });

  test("a python module's process may serve its own tools on its own node, and their discovery", () => {
    const { permissions: p } = moduleGrant({ node: "n1", manifest: daemon("python"), owners });
    assertSubscribe(p, {
      allowed: ["mesh.tools.n1.snake.greet", "$SRV.INFO", "$SRV.PING.snake", "$SRV.INFO.snake.x1"],
      refused: ["mesh.tools.n2.snake.greet", "mesh.tools.n1.hello.greet", "$SRV.INFO.hello"],
    });
  });

  test("a typescript module's process does not: the runtime serves its tools", () => {
    const { permissions: p } = moduleGrant({ node: "n1", manifest: daemon("typescript"), owners });
    assert.equal(hears(p, "mesh.tools.n1.snake.greet"), false);
  });
});

describe("runtimeGrant", () => {
  const daemon = manifest({
    module: "daemon",
    bundles: [{ name: "main", language: "typescript", entrypoints: ["main.ts"] }],
    states: [{ name: "log" }],
  });
  const { permissions: p, problems } = runtimeGrant({
    node: "n1",
    modules: [counter, board, daemon],
    owners,
  });

  test("serves exactly its node's served modules' tools, with discovery and replies", () => {
    assert.ok(hears(p, "mesh.tools.n1.counter.add"));
    assert.ok(hears(p, "mesh.tools.n1.board.show"));
    assert.equal(hears(p, "mesh.tools.n2.counter.add"), false);
    assert.equal(
      hears(p, "mesh.tools.n1.daemon.x"),
      false,
      "a module without a tools bundle is not served",
    );
    assert.equal(hears(p, "mesh.tools.n1.hello.greet"), false);
    for (const verb of ["PING", "INFO", "STATS"]) {
      assert.ok(hears(p, `$SRV.${verb}`));
      assert.ok(hears(p, `$SRV.${verb}.counter`));
      assert.ok(hears(p, `$SRV.${verb}.counter.id123`));
      assert.equal(hears(p, `$SRV.${verb}.hello`), false);
    }
    assert.deepEqual(p.allowResponses, { max: 2 });
  });

  test("files the tool counts of its own node's served modules only (decision 0172)", () => {
    assert.ok(can(p, "mesh.tool-stats.n1.counter"));
    assert.ok(can(p, "mesh.tool-stats.n1.board"));
    assert.equal(can(p, "mesh.tool-stats.n2.counter"), false, "another node's subject");
    assert.equal(can(p, "mesh.tool-stats.n1.daemon"), false, "a module it does not serve");
    assert.equal(can(p, "mesh.tool-stats.n1.hello"), false);
    const module = moduleGrant({ node: "n1", manifest: board, owners }).permissions;
    assert.equal(can(module, "mesh.tool-stats.n1.board"), false, "a module never files its own");
  });

  test("may answer one mesh-wide discovery request once per module it serves", () => {
    const responses = (modules: Parameters<typeof runtimeGrant>[0]["modules"]) =>
      runtimeGrant({ node: "n1", modules, owners }).permissions.allowResponses;
    assert.deepEqual(responses([counter, board, daemon]), { max: 2 });
    assert.equal(responses([counter, counter]), true);
    assert.equal(responses([]), undefined);
  });

  test("cannot subscribe to every service's discovery", () => {
    assert.equal(hears(p, "$SRV.>"), false);
    assert.equal(hears(p, "$SRV.*"), false);
  });

  test("asks its own node's provisioner and hears its changes", () => {
    assert.ok(can(p, "mesh.provision.n1"));
    assert.ok(hears(p, "mesh.provision.n1.changed"));
    assert.equal(can(p, "mesh.provision.n2"), false);
    assert.equal(hears(p, "mesh.provision.n2.changed"), false);
    assert.equal(hears(p, "mesh.provision.n1"), false, "only the host answers asks");
  });

  test("holds what its served modules' code declares, and nothing of the others", () => {
    assert.ok(can(p, kv.put("counter_counts", "x")));
    assert.ok(can(p, kv.put("counter_secret", "x")));
    assert.ok(can(p, kv.put("board_layout", "x")));
    assert.ok(can(p, "mesh.tools.n3.hello.greet"));
    assert.ok(can(p, "mesh.conditions.board.x"));
    assert.ok(can(p, "mesh.keeps.n1.counter"));
    assert.ok(can(p, "mesh.conditions.node-tools.load-failed"));
    assert.ok(can(p, "mesh.logs.n1.counter"), "its tools' ctx.log lines, filed under counter");
    assert.equal(can(p, "mesh.logs.n1.daemon"), false, "not a served module's lines");
    assert.equal(can(p, "mesh.logs.n2.counter"), false);
    assert.equal(can(p, kv.get("daemon_log", "x")), false);
    assert.equal(can(p, "mesh.conditions.daemon.x"), false);
    assert.ok(hears(p, "_INBOX.n1.node-tools.abc"));
    assert.equal(hears(p, "_INBOX.n1.board.abc"), false, "the runtime has one inbox for all");
  });

  test("reports its served modules' refused reads", () => {
    const bad = manifest({ module: "bad", bundles: [tools], reads: ["counter/secret"] });
    const out = runtimeGrant({ node: "n1", modules: [bad], owners });
    assert.deepEqual(
      out.problems.map((x) => [x.module, x.reason]),
      [["bad", ReadRefusal.notReadable]],
    );
    assert.equal(can(out.permissions, kv.get("counter_secret", "x")), false);
  });

  test("with nothing to serve, still a list on each side", () => {
    const out = runtimeGrant({ node: "n1", modules: [], owners: {} });
    assert.deepEqual(out.permissions, {
      publish: { allow: ["_INBOX.>", "mesh.conditions.node-tools.*", "mesh.provision.n1"] },
      subscribe: { allow: ["_INBOX.n1.node-tools.>", "mesh.provision.n1.changed"] },
    });
  });

  test("it answers any caller's inbox by its own right: a users reload forgets response rights", () => {
    const out = runtimeGrant({ node: "n1", modules: [], owners: {} });
    assert.ok(can(out.permissions, "_INBOX.n2.operator.abc.1"));
  });

  test("the runtime's own manifest is granted as its own module", () => {
    const own = manifest({
      module: "node-tools",
      bundles: [{ name: "rt", language: "typescript", entrypoints: ["m.ts"] }],
      states: [{ name: "cache" }],
    });
    const out = runtimeGrant({ node: "n1", modules: [own], owners: {} });
    assert.ok(can(out.permissions, kv.put("node-tools_cache", "x")));
    assert.equal(hears(out.permissions, "mesh.tools.n1.node-tools.x"), false);
  });

  test("no problems for the table's modules", () => assert.deepEqual(problems, []));
});
