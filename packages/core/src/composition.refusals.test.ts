import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ErrorCode } from "@mesh/protocol";
import { compose, compositionRefused } from "./composition.js";
import { digest, manifest } from "./test-support.js";
import { counter, hello, ids, node, ok, raw, refusals, runtime } from "./composition-fixtures.js";

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
