import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ErrorCode, isMeshError, type ProcessResource } from "@mesh/protocol";
import { accountHomeOf, compose } from "./composition.js";
import { fingerprintOf } from "./fingerprint.js";
import { digest, manifest } from "./test-support.js";
import {
  counter,
  firewall,
  hello,
  ids,
  node,
  ok,
  plain,
  raw,
  runtime,
  runtimeOf,
} from "./composition-fixtures.js";

describe("compose: what is sent where", () => {
  it("sends no tools bundle to a node without the runtime", () => {
    const resources = ok(node([hello, counter]));
    assert.deepEqual(ids(resources), [
      "counter.need-broker",
      "counter.process-daemon",
      "counter.process-once",
      "hello.need-token",
    ]);
  });

  it("sends one archive per tools bundle where the runtime is, and the bundle a process runs only with it", () => {
    const resources = ok(node([hello, counter, runtime()]));
    assert.deepEqual(ids(resources), [
      "counter.bundle-tools",
      "counter.need-broker",
      "counter.process-daemon",
      "counter.process-once",
      "hello.bundle-tools",
      "hello.need-token",
      "node-tools.need-broker",
      "node-tools.runtime",
    ]);
    assert.deepEqual(
      resources.find((r) => r.id === "hello.bundle-tools"),
      {
        digest: digest("a"),
        id: "hello.bundle-tools",
        module: "hello",
        path: "/var/lib/mesh/bundles/hello/tools",
        source: `mesh-artifacts/${digest("a")}`,
        type: "archive",
      },
    );
    assert.ok(!resources.some((r) => r.id === "counter.bundle-daemon"));
  });

  it("sorts resources by id", () => {
    const resources = ok(node([runtime(), counter, hello]));
    assert.deepEqual(ids(resources), [...ids(resources)].sort());
  });
});

describe("compose: declared files", () => {
  it("puts a relative secret path under <root>/secrets/<module>/, and names it to the process", () => {
    const relative = manifest({
      ...counter,
      "own-secrets": { broker: { path: "broker.json" }, token: { path: "api/token" } },
    });
    const resources = ok(node([relative], { root: "/srv/mesh" }));
    const paths = Object.fromEntries(
      resources.filter((r) => r.type === "need").map((r) => [r.id, r.path]),
    );
    assert.deepEqual(paths, {
      "counter.need-broker": "/srv/mesh/secrets/counter/broker.json",
      "counter.need-token": "/srv/mesh/secrets/counter/api/token",
    });
    const daemon = resources.find((r) => r.id === "counter.process-daemon") as ProcessResource;
    assert.equal(daemon.env["MESH_BROKER_FILE"], "/srv/mesh/secrets/counter/broker.json");
  });

  it("never composes a secret path outside the module's secrets folder, whatever the value says", () => {
    // The manifest check refuses such a path; a manifest value that skipped it still cannot
    // make the node write elsewhere.
    const forged = { ...counter, "own-secrets": { broker: { path: "/etc/passwd" } } };
    assert.throws(
      () => compose(node([forged], { root: "/srv/mesh" })),
      (e: unknown) => isMeshError(e, ErrorCode.INVALID_VALUE),
    );
  });
});

describe("compose: the runtime's process", () => {
  it("runs its one bundle with node, serves every load sorted, and restarts on bundles and credential", () => {
    const process = runtimeOf(ok(node([runtime(), hello, counter])));
    assert.deepEqual(process, {
      digest: digest("e"),
      env: {
        MESH_BROKER_FILE: "/var/lib/mesh/secrets/node-tools/broker.json",
        MESH_TOOL_MODULES: [
          "counter=/var/lib/mesh/bundles/counter/tools/src/tools.js",
          "hello=/var/lib/mesh/bundles/hello/tools/src/a.js",
          "hello=/var/lib/mesh/bundles/hello/tools/src/b.js",
        ].join(","),
      },
      id: "node-tools.runtime",
      module: "node-tools",
      name: "node-tools",
      path: "/var/lib/mesh/bundles/node-tools/runtime",
      "restart-on": ["counter.bundle-tools", "hello.bundle-tools", "node-tools.need-broker"],
      run: ["node", "src/main.js"],
      source: `mesh-artifacts/${digest("e")}`,
      type: "process",
    });
  });

  it("hands each module's own idle time (tools-idle, seconds) to the runtime in ms", () => {
    const process = runtimeOf(ok(node([runtime(), { ...hello, "tools-idle": 60 }, counter])));
    assert.equal(process.env.MESH_TOOL_IDLE, "hello=60000");
    const without = runtimeOf(ok(node([runtime(), hello, counter])));
    assert.equal(without.env.MESH_TOOL_IDLE, undefined, "no variable when no module says one");
  });

  it("serves a prebuilt bundle's loads as written", () => {
    const process = runtimeOf(ok(node([runtime(), firewall])));
    assert.equal(
      process.env.MESH_TOOL_MODULES,
      "firewall=/var/lib/mesh/bundles/firewall/tools/fw.js",
    );
  });

  it("serves nothing when no module has tools", () => {
    const process = runtimeOf(ok(node([runtime(), plain])));
    assert.equal(process.env.MESH_TOOL_MODULES, "");
    assert.deepEqual(process["restart-on"], ["node-tools.need-broker"]);
  });

  it("runs as the operator account, with its name and home, when there is one", () => {
    const process = runtimeOf(ok(node([runtime(), hello], { account: "ada" })));
    assert.equal(process.user, "ada");
    assert.equal(process.env.MESH_OPERATOR_ACCOUNT, "ada");
    assert.equal(process.env.MESH_OPERATOR_HOME, "/home/ada");
    assert.equal(
      runtimeOf(ok(node([runtime()], { account: "ada", accountHome: "/srv/ada" }))).env
        .MESH_OPERATOR_HOME,
      "/srv/ada",
    );
    assert.equal(
      runtimeOf(ok(node([runtime()], { account: "root" }))).env.MESH_OPERATOR_HOME,
      "/root",
    );
  });

  it("runs as the host's own account, without the operator words, when there is none", () => {
    for (const account of [undefined, ""]) {
      const process = runtimeOf(ok(node([runtime(), hello], { account })));
      assert.equal(process.user, undefined);
      assert.equal(process.env.MESH_OPERATOR_ACCOUNT, undefined);
      assert.equal(process.env.MESH_OPERATOR_HOME, undefined);
    }
  });

  it("leaves a module with a filter out altogether on an adopted machine", () => {
    const adopted = ok(node([runtime(), hello, firewall], { adopted: true }));
    assert.ok(!adopted.some((r) => r.module === "firewall"));
    assert.ok(!runtimeOf(adopted).env.MESH_TOOL_MODULES?.includes("firewall"));
    assert.ok(!runtimeOf(adopted)["restart-on"].includes("firewall.bundle-tools"));
    const composition = compose(node([runtime(), hello, firewall], { adopted: true }));
    assert.ok(composition.ok);
    assert.deepEqual(
      composition.leftOut.map((l) => l.module),
      ["firewall"],
    );
  });

  it("keeps a module with a filter on a machine that is not adopted", () => {
    const resources = ok(node([runtime(), firewall], { adopted: false }));
    assert.ok(resources.some((r) => r.id === "firewall.bundle-tools"));
    assert.match(runtimeOf(resources).env.MESH_TOOL_MODULES ?? "", /^firewall=/);
  });

  it("uses the node's root for every path", () => {
    const resources = ok(node([runtime(), hello], { root: "/opt/mesh/" }));
    assert.equal(runtimeOf(resources).path, "/opt/mesh/bundles/node-tools/runtime");
    assert.match(
      runtimeOf(resources).env.MESH_TOOL_MODULES ?? "",
      /^hello=\/opt\/mesh\/bundles\/hello\/tools\//,
    );
  });
});

describe("compose: needs and declared processes", () => {
  it("declares a need per own-secret: broker a credential, the rest secrets", () => {
    const resources = ok(node([counter, hello]));
    assert.deepEqual(
      resources.find((r) => r.id === "counter.need-broker"),
      {
        id: "counter.need-broker",
        kind: "credential",
        module: "counter",
        name: "broker",
        path: "/var/lib/mesh/secrets/counter/broker.json",
        type: "need",
      },
    );
    assert.equal(resources.find((r) => r.id === "hello.need-token")?.type, "need");
  });

  it("gives the account the runtime's credential and the secrets of modules it serves, never another module's credential", () => {
    const resources = ok(node([runtime(), hello, counter], { account: "ada" }));
    const owner = (id: string): string | undefined => {
      const r = resources.find((found) => found.id === id);
      return r?.type === "need" ? r.user : "not a need";
    };
    assert.equal(owner("node-tools.need-broker"), "ada");
    assert.equal(owner("hello.need-token"), "ada");
    assert.equal(owner("counter.need-broker"), undefined);
    // Without the runtime, no one runs hello's code as the account.
    const alone = ok(node([hello], { account: "ada" }));
    assert.ok(!alone.some((r) => r.type === "need" && r.user !== undefined));
  });

  it("runs a process's bundle's first entrypoint as built, unless it says run", () => {
    const resources = ok(node([counter]));
    const daemon = resources.find((r) => r.id === "counter.process-daemon");
    assert.ok(daemon?.type === "process");
    assert.deepEqual(daemon.run, ["node", "src/main.js"]);
    assert.equal(daemon.path, "/var/lib/mesh/bundles/counter/daemon");
    assert.equal(daemon.source, `mesh-artifacts/${digest("b")}`);
    assert.equal(daemon.user, undefined);
    const once = resources.find((r) => r.id === "counter.process-once");
    assert.ok(once?.type === "process");
    assert.deepEqual(once.run, ["node", "src/main.js", "--once"]);
  });

  it("keeps a process's env and restart-on, sorted, with its credential's path and need", () => {
    const daemon = ok(node([counter])).find((r) => r.id === "counter.process-daemon");
    assert.ok(daemon?.type === "process");
    assert.deepEqual(Object.keys(daemon.env), [
      "A",
      "B",
      "MESH_BROKER_FILE",
      "MESH_SECRETS_DIR",
      "MESH_SECRET_FILES",
    ]);
    assert.equal(daemon.env.MESH_BROKER_FILE, "/var/lib/mesh/secrets/counter/broker.json");
    assert.equal(daemon.env.MESH_SECRETS_DIR, "/var/lib/mesh/secrets/counter");
    assert.deepEqual(JSON.parse(daemon.env.MESH_SECRET_FILES ?? ""), {
      broker: "/var/lib/mesh/secrets/counter/broker.json",
    });
    assert.deepEqual(daemon["restart-on"], [
      "config",
      "counter.bundle-tools",
      "counter.need-broker",
    ]);
  });

  it("sets no credential for a module that declares none, and names its (empty) secrets", () => {
    const process = ok(node([plain])).find((r) => r.type === "process");
    assert.ok(process?.type === "process");
    assert.deepEqual(process.env, {
      MESH_SECRETS_DIR: `/var/lib/mesh/secrets/${process.module}`,
      MESH_SECRET_FILES: "{}",
    });
    assert.deepEqual(process["restart-on"], []);
  });
});

describe("compose: fingerprints", () => {
  it("is the fingerprint of the resources", () => {
    const composition = compose(node([runtime(), hello]));
    assert.ok(composition.ok);
    assert.equal(composition.fingerprint, fingerprintOf(composition.resources));
    for (const [module, fingerprint] of Object.entries(composition.moduleFingerprints)) {
      assert.equal(
        fingerprint,
        fingerprintOf(composition.resources.filter((r) => r.module === module)),
      );
    }
  });

  it("moves a module's fingerprint, and not the runtime's, when one of its bundles changes", () => {
    const before = compose(node([runtime(), hello, counter]));
    const changed = raw({ ...hello, bundles: [{ ...hello.bundles[0], digest: digest("9") }] });
    const after = compose(node([runtime(), changed, counter]));
    assert.ok(before.ok && after.ok);
    assert.notEqual(before.fingerprint, after.fingerprint);
    assert.notEqual(before.moduleFingerprints.hello, after.moduleFingerprints.hello);
    // The runtime is restarted through restart-on, not recomposed: its own resources stay.
    assert.equal(before.moduleFingerprints["node-tools"], after.moduleFingerprints["node-tools"]);
    assert.equal(before.moduleFingerprints.counter, after.moduleFingerprints.counter);
  });
});

describe("accountHomeOf", () => {
  it("takes the home given, else root's or /home/<account>", () => {
    assert.equal(accountHomeOf("ada", "/srv/ada"), "/srv/ada");
    assert.equal(accountHomeOf("ada"), "/home/ada");
    assert.equal(accountHomeOf("ada", ""), "/home/ada");
    assert.equal(accountHomeOf("root"), "/root");
  });
});
