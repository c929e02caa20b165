import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ErrorCode,
  Resource,
  isMeshError,
  type Manifest,
  type ManifestInput,
  type ProcessResource,
  type Resource as ResourceValue,
} from "@mesh/protocol";
import { accountHomeOf, compose, compositionRefused, type NodeResolution } from "./composition.js";
import { fingerprintOf } from "./fingerprint.js";
import { digest, manifest } from "./test-support.js";

const STORE = { store: "mesh-artifacts" };

const runtime = (over: Partial<ManifestInput> = {}): Manifest =>
  manifest({
    module: "node-tools",
    bundles: [
      {
        name: "runtime",
        language: "typescript",
        entrypoints: ["src/main.ts"],
        digest: digest("e"),
      },
    ],
    "own-secrets": { broker: { path: "broker.json" } },
    ...over,
  });

const hello = manifest({
  module: "hello",
  bundles: [
    {
      name: "tools",
      language: "typescript",
      entrypoints: ["src/b.ts", "src/a.ts"],
      loads: ["src/b.ts", "src/a.ts"],
      digest: digest("a"),
    },
  ],
  "own-secrets": { token: { path: "token" } },
});

const counter = manifest({
  module: "counter",
  bundles: [
    { name: "daemon", language: "typescript", entrypoints: ["src/main.mts"], digest: digest("b") },
    {
      name: "tools",
      language: "typescript",
      entrypoints: ["src/tools.ts"],
      loads: ["src/tools.ts"],
      digest: digest("c"),
    },
  ],
  processes: [
    {
      name: "daemon",
      bundle: "daemon",
      env: { B: "2", A: "1" },
      "restart-on": ["config", "counter.bundle-tools"],
    },
    { name: "once", bundle: "daemon", run: ["node", "src/main.js", "--once"] },
  ],
  config: { step: { default: 1 } },
  "own-secrets": { broker: { path: "broker.json" } },
});

const firewall = manifest({
  module: "firewall",
  bundles: [
    {
      name: "tools",
      language: "prebuilt",
      source: "dist/fw.tgz",
      digest: digest("d"),
      loads: ["fw.js"],
    },
  ],
  filter: { description: "opens ports" },
});

/** A daemon with no tools and no credential. */
const plain = manifest({
  module: "plain",
  bundles: [{ name: "d", language: "typescript", entrypoints: ["d.ts"], digest: digest("f") }],
  processes: [{ name: "d", bundle: "d" }],
});

const node = (modules: Manifest[], over: Partial<NodeResolution> = {}): NodeResolution => ({
  node: "edge-01",
  modules,
  artifacts: STORE,
  ...over,
});

function ok(resolution: NodeResolution): ResourceValue[] {
  const composition = compose(resolution);
  assert.ok(composition.ok, composition.ok ? "" : JSON.stringify(composition.refusals, null, 2));
  for (const r of composition.resources) Resource.parse(r);
  return [...composition.resources];
}

function refusals(resolution: NodeResolution): string[] {
  const composition = compose(resolution);
  assert.ok(!composition.ok, "composed, where a refusal was expected");
  assert.equal(composition.code, ErrorCode.COMPOSITION_REFUSED);
  for (const r of composition.refusals) assert.ok(r.reason.length > 0 && r.fix.length > 0);
  return composition.refusals.map(
    (r) => `${r.code}${r.module === undefined ? "" : `@${r.module}`}`,
  );
}

const ids = (resources: readonly ResourceValue[]): string[] => resources.map((r) => r.id);
const runtimeOf = (resources: readonly ResourceValue[]): ProcessResource => {
  const found = resources.find((r) => r.id === "node-tools.runtime");
  assert.ok(found?.type === "process", "no runtime process");
  return found;
};

/** A manifest as composition might be handed it, past what the schema allows (for refusals). */
const raw = (value: unknown): Manifest => value as Manifest;

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

describe("compose: refusals", () => {
  it("refuses a runtime with other than one bundle", () => {
    assert.deepEqual(refusals(node([raw({ ...runtime(), bundles: [] })])), [
      "runtime-one-bundle@node-tools",
    ]);
    const two = raw({
      ...runtime(),
      bundles: [...runtime().bundles, { ...runtime().bundles[0], name: "other" }],
    });
    assert.deepEqual(refusals(node([two])), ["runtime-one-bundle@node-tools"]);
  });

  it("refuses a runtime whose bundle has other than one entrypoint", () => {
    for (const entrypoints of [[], ["a.ts", "b.ts"]]) {
      const broken = raw({ ...runtime(), bundles: [{ ...runtime().bundles[0], entrypoints }] });
      assert.deepEqual(refusals(node([broken])), ["runtime-one-entrypoint@node-tools"]);
    }
  });

  it("refuses a runtime in a language the mesh cannot run", () => {
    for (const language of ["prebuilt", "python"]) {
      const broken = raw({ ...runtime(), bundles: [{ ...runtime().bundles[0], language }] });
      assert.deepEqual(refusals(node([broken])), ["runtime-language@node-tools"]);
    }
  });

  it("refuses a runtime without a broker secret", () => {
    assert.deepEqual(refusals(node([raw({ ...runtime(), "own-secrets": {} })])), [
      "runtime-broker-secret@node-tools",
    ]);
  });

  it("refuses every source when there is no artifact store", () => {
    assert.deepEqual(refusals(node([runtime(), hello, counter], { artifacts: undefined })), [
      "artifact-store-missing@counter",
      "artifact-store-missing@counter",
      "artifact-store-missing@counter",
      "artifact-store-missing@hello",
      "artifact-store-missing@node-tools",
    ]);
    const emptyStore = compose(node([hello, runtime()], { artifacts: { store: "" } }));
    assert.ok(!emptyStore.ok);
    assert.match(emptyStore.refusals[0]?.reason ?? "", /no artifact store/);
  });

  it("composes needs alone without an artifact store", () => {
    const secretsOnly = manifest({
      module: "keys",
      bundles: [],
      "own-secrets": { k: { path: "k" } },
    });
    assert.deepEqual(ids(ok(node([secretsOnly], { artifacts: undefined }))), ["keys.need-k"]);
  });

  it("tells every reason at once", () => {
    const broken = raw({
      ...runtime(),
      bundles: [{ ...runtime().bundles[0], entrypoints: [], language: "cobol" }],
      "own-secrets": {},
    });
    assert.deepEqual(refusals(node([broken])), [
      "runtime-broker-secret@node-tools",
      "runtime-language@node-tools",
      "runtime-one-entrypoint@node-tools",
    ]);
  });

  it("refuses a bundle without a digest (a manifest that is not resolved)", () => {
    const unresolved = raw({ ...hello, bundles: [{ ...hello.bundles[0], digest: undefined }] });
    assert.deepEqual(refusals(node([runtime(), unresolved])), ["bundle-digest-missing@hello"]);
  });

  it("refuses what checkManifest would have: a missing bundle, a process with nothing to run", () => {
    const missing = raw({ ...counter, processes: [{ name: "x", bundle: "nope" }] });
    assert.deepEqual(refusals(node([missing])), ["process-bundle-exists@counter"]);
    const prebuilt = raw({
      module: "bin",
      bundles: [
        {
          name: "b",
          language: "prebuilt",
          source: "b.tgz",
          digest: digest("a"),
          entrypoints: ["b"],
        },
      ],
      processes: [{ name: "b", bundle: "b" }],
      "own-secrets": {},
    });
    assert.deepEqual(refusals(node([prebuilt])), ["process-run-needed@bin"]);
  });

  it("refuses a module wanted twice, a bad node or module name, a bad account or root", () => {
    assert.deepEqual(refusals(node([hello, hello])), ["module-once@hello"]);
    assert.deepEqual(refusals(node([hello], { node: "all" })), ["name-valid"]);
    assert.deepEqual(refusals(node([raw({ ...hello, module: "Hello" })])), ["name-valid@Hello"]);
    assert.deepEqual(refusals(node([hello], { account: "ada smith" })), ["account-valid"]);
    assert.deepEqual(refusals(node([hello], { account: "ada", accountHome: "home/ada" })), [
      "account-valid",
    ]);
    assert.deepEqual(refusals(node([hello], { root: "mesh" })), ["root-valid"]);
  });

  it("makes one error of every refusal", () => {
    const composition = compose(
      node([raw({ ...runtime(), bundles: [] })], { artifacts: undefined }),
    );
    assert.ok(!composition.ok);
    const error = compositionRefused(composition.node, composition.refusals);
    assert.equal(error.code, ErrorCode.COMPOSITION_REFUSED);
    assert.equal(error.node, "edge-01");
    assert.match(error.message, /runtime-one-bundle/);
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
