/**
 * The controller's verbs as an operator runs them (the built `mesh`, as a child process): a
 * manifest checked with every problem and a non-zero exit; against a real bus and controller,
 * `mesh compose` for a node and for a refused one, `mesh join-token`, and `mesh secret set` with
 * the value on stdin.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { Bucket, parseJoinToken } from "@mesh/protocol";
import { KvBucket, generateNodeKeys, writeCredential, type MeshBus } from "@mesh/bus";
import { startMesh, type Mesh } from "@mesh/controller/testing";
import { helloManifest, presenceOf, seedWanted } from "../testing/fixtures.js";
import { rawPutter } from "../testing/operator-bus.js";
import { runMesh } from "../testing/run-mesh.js";

const FIXTURES = fileURLToPath(new URL("../../../core/test-fixtures/", import.meta.url));

describe("mesh manifest check", () => {
  it("prints every problem as JSON and exits 3", async () => {
    const run = await runMesh([
      "manifest",
      "check",
      join(FIXTURES, "bad-manifests", "05-process-names-missing-bundle.yaml"),
      "--json",
    ]);
    assert.equal(run.code, 3, run.stderr);
    const report = JSON.parse(run.stdout) as { ok: boolean; problems: { code: string }[] };
    assert.equal(report.ok, false);
    assert.deepEqual(report.problems.map((p) => p.code).sort(), [
      "bundle-used",
      "process-bundle-exists",
    ]);
  });

  it("says a good manifest is good, exit 0", async () => {
    const run = await runMesh([
      "manifest",
      "check",
      join(FIXTURES, "golden", "modules", "hello.yaml"),
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /hello's manifest is good/);
  });

  it("refuses a folder without a manifest with a non-zero exit", async () => {
    const run = await runMesh(["manifest", "check", FIXTURES]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /holds no manifest/);
  });
});

describe("mesh compose, join-token and secret set, on a real bus", () => {
  let admin: MeshBus;
  let mesh: Mesh;
  let dir: string;
  let credential: string;
  const keys = generateNodeKeys();

  before(async () => {
    // The controller fixture: a real bus with the layout, and a controller running on it.
    mesh = await startMesh();
    await mesh.startController();
    ({ admin, dir } = mesh);
    credential = join(dir, "operator.json");
    await writeCredential(credential, mesh.operator);

    const put = rawPutter(admin);
    // Registered, as `mesh secret set` refuses a module the mesh does not know (issue 14.8).
    await put(Bucket.modules, "hello", {
      module: "hello",
      source: { kind: "directory", path: "/src/hello" },
      by: "operator",
      at: new Date().toISOString(),
    });
    await seedWanted(
      put,
      helloManifest({ "own-secrets": { "api-token": { path: "api-token" } } }),
      { nodes: ["n1", "n2"], build: "1-a" },
    );
    await put(Bucket.presence, "n1", presenceOf("n1", new Date().toISOString(), keys.publicKey));
  });

  after(() => mesh?.[Symbol.asyncDispose]());

  it("mesh compose prints what a node would be sent", async () => {
    const run = await runMesh(["compose", "--node", "n1", "--credential", credential, "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as { ok: boolean; resources: { id: string }[] };
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.resources.map((r) => r.id),
      ["hello.need-api-token"],
    );
  });

  it("mesh compose prints every refusal with its reason and exits 3", async () => {
    const run = await runMesh(["compose", "--node", "n2", "--credential", credential]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stdout, /n2 has no presence/);
    assert.match(run.stdout, /fix: /);
  });

  it("mesh join-token prints a one-time token", async () => {
    const run = await runMesh(["join-token", "--credential", credential, "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const { token } = JSON.parse(run.stdout) as { token: string };
    assert.ok(parseJoinToken(token) !== undefined);
  });

  it("mesh secret set reads the value from stdin, and the vault keeps it sealed at rest", async () => {
    const run = await runMesh(["secret", "set", "hello", "api-token", "--credential", credential], {
      input: "tok3n\n",
    });
    assert.equal(run.code, 0, run.stderr);
    const stored = await (await KvBucket.open(admin, Bucket.secrets)).get("hello.api-token");
    assert.ok(stored !== undefined);
    assert.ok(!JSON.stringify(stored.value).includes("tok3n"), "sealed at rest");
  });
});
