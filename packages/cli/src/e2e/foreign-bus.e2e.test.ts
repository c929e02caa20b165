/**
 * `mesh up --bus URL --bus-credential FILE` (issue 13.1): the mesh's processes run against a
 * nats-server the mesh did not start, with the one login its operator gave. The mesh creates its
 * layout there (with the one copy a single server allows), runs no server of its own, and a tool
 * of a module assigned to the node answers. A url beyond loopback without TLS is refused.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { MeshBus, streamPlacement } from "@mesh/bus";
import { FULL_PERMISSIONS } from "@mesh/bus/server";
import { startTestServer, type TestServer } from "@mesh/bus/testing";
import { Bucket, ErrorCode, kvStreamName } from "@mesh/protocol";
import { DemoMesh, until, type UpReport } from "../testing/demo-mesh.js";
import { registerAndAssignEverywhere, examplesSource } from "../up/modules.js";
import { runMesh } from "../testing/run-mesh.js";

const NODE = "foreign-1";
const login = { user: "the-mesh", password: "a-password-the-bus-operator-gave" };
let server: TestServer | undefined;
let mesh: DemoMesh | undefined;
let report: UpReport | undefined;
let root = "";
let loginFile = "";

before(async () => {
  server = await startTestServer({ users: [{ ...login, permissions: FULL_PERMISSIONS }] });
  root = await mkdtemp(join(tmpdir(), "mesh-foreign-"));
  loginFile = join(root, "..", `${root.split("/").pop() ?? "x"}-login.json`);
  await writeFile(loginFile, JSON.stringify(login), { mode: 0o600 });
  mesh = new DemoMesh({
    root,
    port: 0,
    node: NODE,
    demo: false,
    args: ["--bus", server.url, "--bus-credential", loginFile],
  });
  report = await mesh.up();
});

after(async () => {
  await mesh?.stop();
  await server?.stop();
  await rm(root, { recursive: true, force: true });
  await rm(loginFile, { force: true });
});

describe("mesh up --bus", () => {
  test("runs no server of its own and makes its layout on the foreign bus", async () => {
    assert.ok(report !== undefined && server !== undefined && mesh !== undefined);
    assert.deepEqual(report.bus.servers, []);
    assert.deepEqual(await mesh.pidsOf("nats-server"), []);
    const admin = await MeshBus.connect(
      { servers: [server.url], ...server.admin, node: "test", module: "admin" },
      { say: () => undefined },
    );
    try {
      assert.equal((await streamPlacement(admin, kvStreamName(Bucket.wants))).replicas, 1);
    } finally {
      await admin.close();
    }
  });

  test("a module assigned to the node answers its tool", async () => {
    assert.ok(mesh !== undefined);
    const stop = new AbortController();
    await registerAndAssignEverywhere(mesh.bus, examplesSource("hello"), {
      by: "the foreign-bus test",
      signal: stop.signal,
      say: () => undefined,
    });
    await until(
      async () => ((await mesh?.healthy(["node-tools", "hello"])) === true ? true : undefined),
      240_000,
      "node-tools and hello healthy on the foreign bus",
    );
    const reply = await until(
      () => mesh?.call("hello", "greet", { name: "Ada" }) ?? Promise.resolve(undefined),
      60_000,
      "hello to answer",
    );
    assert.match(JSON.stringify(reply), /Ada/);
  });

  test("a plain nats:// bus beyond loopback is refused without --insecure", async () => {
    const other = await mkdtemp(join(tmpdir(), "mesh-foreign-refused-"));
    try {
      const result = await runMesh(
        [
          "up",
          "--json",
          "--root",
          other,
          "--bus",
          "nats://10.255.0.1:4222",
          "--bus-credential",
          loginFile,
        ],
        { deadlineMs: 60_000 },
      );
      assert.notEqual(result.code, 0);
      assert.match(result.stdout, new RegExp(ErrorCode.BUS_UNPROTECTED));
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
