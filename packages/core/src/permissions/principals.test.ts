import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { controllerGrant, hostGrant, operatorGrant, viewGrant } from "./principals.js";
import { assertPublish, assertSubscribe, can, hears, kv } from "./test-support.js";

describe("hostGrant", () => {
  const p = hostGrant({ node: "n1" });

  test("its own composition only: get and watch, no other node's, no read around the key", () => {
    assertPublish(p, {
      allowed: [
        kv.get("mesh-composed", "n1"),
        kv.watch("mesh-composed", "n1"),
        kv.fc("mesh-composed"),
      ],
      refused: [
        kv.get("mesh-composed", "n2"),
        kv.get("mesh-composed", "*"),
        kv.get("mesh-composed", ">"),
        kv.watch("mesh-composed", "n2"),
        kv.watch("mesh-composed", ">"),
        kv.watch("mesh-composed", "*"),
        kv.msgGet("mesh-composed"),
        kv.getByRevision("mesh-composed"),
        kv.put("mesh-composed", "n1"),
      ],
    });
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
    assertPublish(p, {
      allowed: [
        "mesh.tools.n1.hello.greet",
        "$SRV.PING",
        "$SRV.INFO.hello",
        "$JS.API.CONSUMER.CREATE.mesh-logs.oc_X_1.mesh.logs.n1.hello",
        "$JS.API.CONSUMER.CREATE.mesh-conditions.oc_X_1.mesh.conditions.>",
        // A module's tool counts on every node (decision 0172)…
        "$JS.API.CONSUMER.CREATE.mesh-tool-stats.oc_X_1.mesh.tool-stats.*.hello",
      ],
      refused: [
        "$JS.API.CONSUMER.CREATE.mesh-logs.oc_X_1.>",
        // … and it files none itself.
        "mesh.tool-stats.n1.hello",
        // The operator does not speak as a module.
        "mesh.conditions.hello.x",
      ],
    });
    assertSubscribe(p, { refused: ["mesh.tools.n1.hello.greet"] });
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
    assertPublish(p, {
      allowed: [
        "$JS.API.INFO",
        "$JS.API.STREAM.NAMES",
        "$JS.API.STREAM.LIST",
        "$JS.API.STREAM.INFO.KV_mesh-modules",
        "$JS.API.CONSUMER.LIST.mesh-logs",
        "$JS.API.CONSUMER.INFO.mesh-logs.c1",
      ],
      refused: [
        "$JS.API.STREAM.MSG.GET.KV_mesh-secrets",
        "$JS.API.DIRECT.GET.KV_mesh-secrets.$KV.mesh-secrets.hello.token",
        "$JS.API.STREAM.PURGE.KV_mesh-modules",
        "$JS.API.STREAM.CREATE.X",
        "$JS.API.CONSUMER.DELETE.mesh-logs.c1",
        "$JS.API.DIRECT.GET.KV_counter_counts.$KV.counter_counts.a",
      ],
    });
  });

  test("asks the controller for join tokens and secrets, and cannot present a join itself", () => {
    assertPublish(p, {
      allowed: [
        "mesh.controller.join-token",
        "mesh.controller.secret-set",
        "mesh.controller.secret-list",
        "mesh.controller.secret-unset",
        "mesh.controller.condition-resolve",
      ],
      // No subject hands a secret's value back.
      refused: ["mesh.controller.secret-get", "mesh.join"],
    });
    assertSubscribe(p, { refused: ["mesh.controller.join-token"] });
  });
});

describe("viewGrant", () => {
  test("both accesses read every module's tool counts and file none (decision 0172)", () => {
    for (const access of ["operate", "read"] as const) {
      const p = viewGrant({ node: "n1", access });
      const read = "$JS.API.CONSUMER.CREATE.mesh-tool-stats.oc_X_1.mesh.tool-stats.*.hello";
      assert.ok(can(p, read), access);
      assert.equal(can(p, "mesh.tool-stats.n1.hello"), false, access);
    }
  });
});

describe("controllerGrant", () => {
  test("is admin: everything, streams included", () => {
    const p = controllerGrant();
    const everything = [
      "$JS.API.STREAM.CREATE.KV_x",
      "$JS.API.INFO",
      "$KV.mesh-secrets.a.b",
      "anything",
    ];
    assertPublish(p, { allowed: everything });
    assertSubscribe(p, { allowed: everything });
  });
});
