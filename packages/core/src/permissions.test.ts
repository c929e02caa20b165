import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ErrorCode,
  Manifest,
  type ManifestInput,
  type Permissions,
  isMeshError,
} from "@mesh/protocol";
import {
  ReadRefusal,
  assignerGrant,
  controllerGrant,
  deliveryGrant,
  hostGrant,
  isAllowed,
  moduleGrant,
  operatorGrant,
  runtimeGrant,
  subjectMatches,
} from "./permissions.js";

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

const can = (p: Permissions, subject: string): boolean => isAllowed(p, "publish", subject);
const hears = (p: Permissions, subject: string): boolean => isAllowed(p, "subscribe", subject);

/** The exact subjects the v3 client sends (docs/nats.md §1.1), for a bucket with allow_direct. */
const kv = {
  get: (bucket: string, key: string) => `$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.${key}`,
  getByRevision: (bucket: string) => `$JS.API.DIRECT.GET.KV_${bucket}`,
  msgGet: (bucket: string) => `$JS.API.STREAM.MSG.GET.KV_${bucket}`,
  watch: (bucket: string, filter = ">") =>
    `$JS.API.CONSUMER.CREATE.KV_${bucket}.oc_X_1.$KV.${bucket}.${filter}`,
  keysInfo: (bucket: string) => `$JS.API.CONSUMER.INFO.KV_${bucket}.oc_X_1`,
  put: (bucket: string, key: string) => `$KV.${bucket}.${key}`,
  fc: (bucket: string) => `$JS.FC.KV_${bucket}.oc_X_1.abc`,
};

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

  test("its own states: get, watch, keys, flow control and write", () => {
    const bucket = "board_layout";
    for (const subject of [
      kv.get(bucket, "x"),
      kv.watch(bucket),
      kv.keysInfo(bucket),
      kv.fc(bucket),
      kv.put(bucket, "x"),
    ]) {
      assert.ok(can(p, subject), subject);
    }
  });

  test("a readable state it reads: read only", () => {
    const bucket = "counter_counts";
    for (const subject of [
      kv.get(bucket, "a.b"),
      kv.watch(bucket),
      kv.watch(bucket, "a.*"),
      kv.keysInfo(bucket),
      kv.fc(bucket),
    ]) {
      assert.ok(can(p, subject), subject);
    }
    assert.equal(can(p, kv.put(bucket, "a")), false);
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

describe("hostGrant", () => {
  const p = hostGrant({ node: "n1" });

  test("its own composition only: get and watch, no other node's, no read around the key", () => {
    assert.ok(can(p, kv.get("mesh-composed", "n1")));
    assert.ok(can(p, kv.watch("mesh-composed", "n1")));
    assert.ok(can(p, kv.fc("mesh-composed")));
    for (const subject of [
      kv.get("mesh-composed", "n2"),
      kv.get("mesh-composed", "*"),
      kv.get("mesh-composed", ">"),
      kv.watch("mesh-composed", "n2"),
      kv.watch("mesh-composed", ">"),
      kv.watch("mesh-composed", "*"),
      kv.msgGet("mesh-composed"),
      kv.getByRevision("mesh-composed"),
      kv.put("mesh-composed", "n1"),
    ]) {
      assert.equal(can(p, subject), false, subject);
    }
  });

  test("writes its own presence and have, and gets its own have back", () => {
    assert.ok(can(p, kv.put("mesh-presence", "n1")));
    assert.equal(can(p, kv.put("mesh-presence", "n2")), false);
    assert.ok(can(p, kv.put("mesh-have", "n1.hello")));
    assert.ok(can(p, kv.get("mesh-have", "n1.hello")));
    assert.equal(can(p, kv.put("mesh-have", "n2.hello")), false);
    assert.equal(can(p, kv.get("mesh-have", "n2.hello")), false);
    assert.equal(can(p, kv.get("mesh-presence", "n2")), false);
  });

  test("fetches archives by digest but does not list or write the store", () => {
    const s = "OBJ_mesh-artifacts";
    assert.ok(can(p, `$JS.API.STREAM.INFO.${s}`));
    assert.ok(can(p, `$JS.API.STREAM.MSG.GET.${s}`));
    assert.ok(can(p, `$JS.API.CONSUMER.CREATE.${s}.oc_X_1.$O.mesh-artifacts.C.nuid123`));
    assert.ok(can(p, `$JS.FC.${s}.oc_X_1.abc`));
    assert.equal(can(p, `$JS.API.CONSUMER.CREATE.${s}.oc_X_1.$O.mesh-artifacts.M.>`), false);
    assert.equal(can(p, "$O.mesh-artifacts.C.nuid123"), false);
    assert.equal(can(p, `$JS.API.STREAM.PURGE.${s}`), false);
  });

  test("reads config, answers its node's provision asks and says changes", () => {
    assert.ok(can(p, kv.get("mesh-config", "hello.greeting.n1")));
    assert.ok(can(p, kv.watch("mesh-config")));
    assert.equal(can(p, kv.put("mesh-config", "hello.greeting")), false);
    assert.ok(hears(p, "mesh.provision.n1"));
    assert.equal(hears(p, "mesh.provision.n2"), false);
    assert.ok(can(p, "mesh.provision.n1.changed"));
    assert.equal(can(p, "mesh.provision.n2.changed"), false);
    assert.equal(p.allowResponses, true);
  });

  test("its provisioner client is a service: its own discovery subjects, and no other service's", () => {
    for (const verb of ["PING", "INFO", "STATS"]) {
      assert.ok(hears(p, `$SRV.${verb}`));
      assert.ok(hears(p, `$SRV.${verb}.mesh-provision`));
      assert.ok(hears(p, `$SRV.${verb}.mesh-provision.ID123`));
      assert.equal(hears(p, `$SRV.${verb}.hello`), false);
    }
    assert.equal(hears(p, "$SRV.>"), false);
  });

  test("logs its own node's processes only; no secrets", () => {
    assert.ok(can(p, "mesh.logs.n1.hello"));
    assert.equal(can(p, "mesh.logs.n2.hello"), false);
    assert.equal(can(p, kv.get("mesh-secrets", "hello.token")), false);
    assert.ok(hears(p, "_INBOX.n1.host.x"));
    assert.equal(hears(p, "_INBOX.n1.node-tools.x"), false);
  });
});

describe("operatorGrant", () => {
  const p = operatorGrant({ node: "laptop" });

  test("reads every mesh bucket but the secrets", () => {
    for (const bucket of [
      "mesh-modules",
      "mesh-wants",
      "mesh-composed",
      "mesh-grants",
      "mesh-have",
      "mesh-config",
    ]) {
      assert.ok(can(p, kv.get(bucket, "a.b")), bucket);
      assert.ok(can(p, kv.watch(bucket)), bucket);
    }
    assert.equal(can(p, kv.get("mesh-secrets", "a.b")), false);
    assert.equal(can(p, kv.get("counter_counts", "a")), false, "module states are the modules'");
  });

  test("writes what the operator decides, and nothing the mesh derives", () => {
    for (const bucket of [
      "mesh-assignments",
      "mesh-puts",
      "mesh-retries",
      "mesh-answers",
      "mesh-config",
      "mesh-modules",
    ]) {
      assert.ok(can(p, kv.put(bucket, "a.b")), bucket);
    }
    for (const bucket of [
      "mesh-wants",
      "mesh-composed",
      "mesh-grants",
      "mesh-secrets",
      "mesh-builds",
      "mesh-have",
    ]) {
      assert.equal(can(p, kv.put(bucket, "a.b")), false, bucket);
    }
  });

  test("calls any tool, discovers every service, reads conditions and logs", () => {
    assert.ok(can(p, "mesh.tools.n1.hello.greet"));
    assert.ok(can(p, "$SRV.PING"));
    assert.ok(can(p, "$SRV.INFO.hello"));
    assert.ok(can(p, "$JS.API.CONSUMER.CREATE.mesh-logs.oc_X_1.mesh.logs.n1.hello"));
    assert.ok(can(p, "$JS.API.CONSUMER.CREATE.mesh-conditions.oc_X_1.mesh.conditions.>"));
    assert.equal(can(p, "$JS.API.CONSUMER.CREATE.mesh-logs.oc_X_1.>"), false);
    assert.equal(
      can(p, "mesh.conditions.hello.x"),
      false,
      "the operator does not speak as a module",
    );
    assert.equal(hears(p, "mesh.tools.n1.hello.greet"), false);
  });

  test("speaks with the default inbox, and never hears another credential's", () => {
    // What the nats CLI and stock clients use: replies on _INBOX.<nuid>.<token>, deliveries on _INBOX.<nuid>.
    assert.ok(hears(p, "_INBOX.Qx7abc"));
    assert.ok(hears(p, "_INBOX.Qx7abc.12"));
    // Every other credential's inbox is _INBOX.<node>.<module>.…, four tokens and more.
    assert.equal(hears(p, "_INBOX.n1.hello.Qx7abc.12"), false);
    assert.equal(hears(p, "_INBOX.laptop.mcp.Qx7abc"), false);
    // A widened subscription is admitted by the literal match, but the deny filters its deliveries.
    assert.deepEqual(p.subscribe.deny, ["_INBOX.*.*.>"]);
  });

  test("lists and describes streams and consumers, and reads no message through that", () => {
    for (const subject of [
      "$JS.API.INFO",
      "$JS.API.STREAM.NAMES",
      "$JS.API.STREAM.LIST",
      "$JS.API.STREAM.INFO.KV_mesh-modules",
      "$JS.API.CONSUMER.LIST.mesh-logs",
      "$JS.API.CONSUMER.INFO.mesh-logs.c1",
    ]) {
      assert.ok(can(p, subject), subject);
    }
    for (const subject of [
      "$JS.API.STREAM.MSG.GET.KV_mesh-secrets",
      "$JS.API.DIRECT.GET.KV_mesh-secrets.$KV.mesh-secrets.hello.token",
      "$JS.API.STREAM.PURGE.KV_mesh-modules",
      "$JS.API.STREAM.CREATE.X",
      "$JS.API.CONSUMER.DELETE.mesh-logs.c1",
      "$JS.API.DIRECT.GET.KV_counter_counts.$KV.counter_counts.a",
    ]) {
      assert.equal(can(p, subject), false, subject);
    }
  });

  test("asks the controller for join tokens and secrets, and cannot present a join itself", () => {
    assert.ok(can(p, "mesh.controller.join-token"));
    assert.ok(can(p, "mesh.controller.secret-set"));
    assert.ok(can(p, "mesh.controller.secret-list"));
    assert.ok(can(p, "mesh.controller.secret-unset"));
    assert.ok(can(p, "mesh.controller.condition-resolve"));
    assert.equal(can(p, "mesh.controller.secret-get"), false, "no subject hands a value back");
    assert.equal(can(p, "mesh.join"), false);
    assert.equal(hears(p, "mesh.controller.join-token"), false);
  });
});

describe("assignerGrant", () => {
  const p = assignerGrant({ node: "n0" });
  const reads = [
    "mesh-assignments",
    "mesh-builds",
    "mesh-candidates",
    "mesh-manifests",
    "mesh-modules",
    "mesh-presence",
    "mesh-have",
    "mesh-puts",
    "mesh-retries",
    "mesh-answers",
    "mesh-composed",
    "mesh-grants",
  ];
  const writes = ["mesh-wants", "mesh-compositions", "mesh-differences", "mesh-asks"];

  test("reads what a pass reads, have with its history", () => {
    for (const bucket of [...reads, ...writes]) {
      assert.ok(can(p, kv.get(bucket, "a.b")), bucket);
      assert.ok(can(p, kv.watch(bucket)), bucket);
      assert.ok(can(p, kv.fc(bucket)), bucket);
    }
  });

  test("writes wants, compositions, differences and asks only", () => {
    for (const bucket of writes) assert.ok(can(p, kv.put(bucket, "a.b")), bucket);
    for (const bucket of reads) assert.equal(can(p, kv.put(bucket, "a.b")), false, bucket);
    assert.equal(can(p, kv.get("mesh-config", "a")), false);
    assert.equal(can(p, kv.get("mesh-secrets", "a")), false);
  });

  test("says conditions and what it keeps, as the assigner", () => {
    assert.ok(can(p, "mesh.conditions.assigner.set-back"));
    assert.ok(can(p, "mesh.keeps.n0.assigner"));
    assert.ok(hears(p, "_INBOX.n0.assigner.x"));
  });
});

describe("deliveryGrant", () => {
  const p = deliveryGrant({ node: "n0" });

  test("reads registrations, keeps candidates, builds and manifests", () => {
    assert.ok(can(p, kv.watch("mesh-modules")));
    assert.equal(can(p, kv.put("mesh-modules", "hello")), false);
    for (const bucket of ["mesh-candidates", "mesh-builds", "mesh-manifests"]) {
      assert.ok(can(p, kv.put(bucket, "a.b")), bucket);
      assert.ok(can(p, kv.get(bucket, "a.b")), bucket);
    }
    assert.equal(can(p, kv.put("mesh-wants", "a.b")), false);
  });

  test("puts archives: what putBlob sends, purge included", () => {
    const s = "OBJ_mesh-artifacts";
    for (const subject of [
      `$JS.API.STREAM.INFO.${s}`,
      `$JS.API.STREAM.MSG.GET.${s}`,
      `$JS.API.STREAM.PURGE.${s}`,
      "$O.mesh-artifacts.C.nuid123",
      "$O.mesh-artifacts.M.YWJj",
    ]) {
      assert.ok(can(p, subject), subject);
    }
    assert.ok(can(p, "mesh.conditions.delivery.build-failed"));
  });
});

describe("controllerGrant", () => {
  test("is admin: everything, streams included", () => {
    const p = controllerGrant();
    for (const subject of [
      "$JS.API.STREAM.CREATE.KV_x",
      "$JS.API.INFO",
      "$KV.mesh-secrets.a.b",
      "anything",
    ]) {
      assert.ok(can(p, subject));
      assert.ok(hears(p, subject));
    }
  });
});
