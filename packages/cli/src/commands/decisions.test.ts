/**
 * `mesh wants` and `mesh differences` say what `mesh status` says (issue 14): each assigned
 * (node, module) with the read model's state, reason and fix, also one that has no want and no
 * difference. The built CLI on the operator's grant against a real bus seeded as the mesh's
 * processes would leave it.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus, ensureLayout, writeCredential } from "@mesh/bus";
import { credentialFor, startTestServer, type TestServer } from "@mesh/bus/testing";
import { operatorGrant } from "@mesh/core";
import { Bucket, Principal } from "@mesh/protocol";
import { runMesh } from "../testing/run-mesh.js";

const HUB = "hub";
const RUN_MS = 30_000;

interface Cell {
  node: string;
  module: string;
  state: string;
  reason: string;
  fix?: string;
}

describe("mesh wants and mesh differences agree with mesh status", () => {
  let server: TestServer;
  let dir: string;
  let cred: string;

  before(async () => {
    server = await startTestServer({
      users: [
        { user: "operator", password: "operator-pw", permissions: operatorGrant({ node: HUB }) },
      ],
    });
    dir = await mkdtemp(join(tmpdir(), "mesh-cli-decisions-"));
    await using admin = await MeshBus.connect(
      credentialFor(server, server.admin, { node: HUB, module: Principal.controller }),
    );
    await ensureLayout(admin);
    const at = new Date().toISOString();
    const put = async (bucket: Bucket, key: string, value: unknown) =>
      (await KvBucket.open(admin, bucket)).put(key, value as never);
    await put(Bucket.presence, "n1", {
      node: "n1",
      facts: { hostname: "n1", os: "linux", arch: "x64", version: "0.1.0" },
      publicKey: "k",
      heartbeat: at,
    });
    // hello: every build failed, so nothing is wanted and nothing differs — yet it does not run.
    await put(Bucket.modules, "hello", {
      module: "hello",
      source: { kind: "directory", path: "/src/hello" },
      by: "ada",
      at,
    });
    await put(Bucket.builds, "hello.1-aaaaaaaa", {
      module: "hello",
      build: "1-aaaaaaaa",
      status: "failed",
      candidate: 1,
      bundles: [],
      log: "error TS2322",
      error: "compile error",
      timings: { started: at },
    });
    await put(Bucket.assignments, "n1.hello", { by: "ada", at });
    // board: wanted and healthy.
    await put(Bucket.assignments, "n1.board", { by: "ada", at });
    await put(Bucket.wants, "n1.board", {
      build: "2-bbbbbbbb",
      manifestDigest: "b".repeat(64),
      fingerprint: "f",
      rule: "newest",
      reason: "the newest build of board",
    });
    await put(Bucket.have, "n1.board", {
      build: "2-bbbbbbbb",
      fingerprint: "f",
      health: "healthy",
      since: at,
      restarts: 0,
    });
    cred = join(dir, "operator.json");
    await writeCredential(
      cred,
      credentialFor(
        server,
        { user: "operator", password: "operator-pw" },
        { node: HUB, module: Principal.operator },
      ),
    );
  });

  after(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const json = async <T>(...args: string[]): Promise<T> => {
    const run = await runMesh([...args, "--json", "--credential", cred], { deadlineMs: RUN_MS });
    assert.equal(run.code, 0, run.stderr);
    return JSON.parse(run.stdout) as T;
  };
  const plain = async (...args: string[]): Promise<string> => {
    const run = await runMesh([...args, "--credential", cred], { deadlineMs: RUN_MS });
    assert.equal(run.code, 0, run.stderr);
    return run.stdout;
  };
  const pick = (c: Cell) => [c.node, c.module, c.state, c.reason, c.fix];

  test("a module assigned with no want is in wants, with status's state, reason and fix", async () => {
    const status = await json<{ attention: Cell[]; modules: Cell[] }>("status");
    const hello = status.attention.find((c) => c.module === "hello");
    assert.ok(hello !== undefined, "status names it under attention");
    assert.match(hello.reason, /every build of hello failed/);
    const wants = await json<{ wants: Record<string, unknown>; cells: Cell[] }>("wants");
    assert.deepEqual(
      wants.cells.map(pick),
      status.modules.map(pick),
      "one cell per assigned module, as status says it",
    );
    assert.deepEqual(Object.keys(wants.wants), ["n1.board"], "the raw wants are still there");
    const text = await plain("wants", "--module", "hello");
    assert.match(text, /n1\.hello: nothing wanted/);
    assert.match(text, /not running because every build of hello failed/);
    assert.match(text, /fix: `mesh builds hello`/);
  });

  test("differences names what does not run although nothing differs, and never says all is well then", async () => {
    const report = await json<{ attention: Cell[] }>("status");
    const differences = await json<{ differences: object; notRunning: Cell[] }>("differences");
    assert.deepEqual(differences.differences, {});
    assert.deepEqual(differences.notRunning.map(pick), report.attention.map(pick));
    const text = await plain("differences");
    assert.doesNotMatch(text, /every node has what it should/);
    assert.match(text, /n1\.hello: not running/);
    assert.match(await plain("differences", "--module", "board"), /every node has what it/);
    const status = await plain("status");
    assert.doesNotMatch(status, /every node has what it should/, "nor does status, then");
    assert.match(status, /what does not run is under NEEDS ATTENTION/);
  });
});
