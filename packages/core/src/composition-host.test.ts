/**
 * The node's host build (decision 0200): `mesh-host`'s one bundle becomes the node's one `host`
 * resource, the composition says it requires the `host-build` feature (decision 0202), and a
 * manifest that is not one bundle with one entrypoint and no process is refused.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HOST_RESOURCE_ID } from "@mesh/protocol";
import { compose } from "./composition.js";
import { hello, ids, node, ok, raw, refusals, runtime } from "./composition-fixtures.js";
import { digest, manifest } from "./test-support.js";

const host = manifest({
  module: "mesh-host",
  bundles: [
    { name: "host", language: "typescript", entrypoints: ["src/main.ts"], digest: digest("9") },
  ],
});

describe("compose: the host build", () => {
  it("is the node's one host resource, with the file Node runs as built", () => {
    const resources = ok(node([host, hello, runtime()]));
    assert.deepEqual(
      resources.find((r) => r.id === HOST_RESOURCE_ID),
      {
        digest: digest("9"),
        entry: "src/main.js",
        id: HOST_RESOURCE_ID,
        module: "mesh-host",
        source: `mesh-artifacts/${digest("9")}`,
        type: "host",
      },
    );
    // No process, need or archive of mesh-host: the launcher runs it.
    assert.deepEqual(
      ids(resources).filter((id) => id.startsWith("mesh-host.")),
      [HOST_RESOURCE_ID],
    );
  });

  it("makes the composition require the host-build feature; one without it requires nothing", () => {
    const withHost = compose(node([host, hello]));
    assert.ok(withHost.ok);
    assert.deepEqual(withHost.requires, { features: ["host-build"], version: "0.1.0" });
    const without = compose(node([hello]));
    assert.ok(without.ok);
    assert.equal(without.requires, undefined);
  });

  it("is refused when it is not one bundle with one entrypoint and no process", () => {
    const two = raw({ ...host, bundles: [...host.bundles, { ...host.bundles[0], name: "more" }] });
    assert.deepEqual(refusals(node([two])), ["host-one-bundle@mesh-host"]);
    const entries = raw({
      ...host,
      bundles: [{ ...host.bundles[0], entrypoints: ["a.ts", "b.ts"] }],
    });
    assert.deepEqual(refusals(node([entries])), ["host-one-bundle@mesh-host"]);
    const running = raw({ ...host, processes: [{ name: "p", bundle: "host" }] });
    assert.deepEqual(refusals(node([running])), ["host-one-bundle@mesh-host"]);
  });

  it("is refused without an artifact store to route it through", () => {
    assert.deepEqual(refusals(node([host], { artifacts: undefined })), [
      "artifact-store-missing@mesh-host",
    ]);
  });
});
