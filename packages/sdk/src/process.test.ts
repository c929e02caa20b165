import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import {
  Condition,
  Keeps,
  Manifest,
  Stream,
  ErrorCode,
  isMeshError,
  stateBucket,
} from "@mesh/protocol";
import { MeshBus, KvBucket, ensureLayout, readStream, writeCredential } from "@mesh/bus";
import {
  createBucket,
  credentialFor,
  deadline,
  startTestServer,
  type TestServer,
} from "@mesh/bus/testing";
import { moduleGrant } from "@mesh/core";
import { connectProcess } from "./process.js";

// counter keeps `counts` (readable); the process speaks with counter's own grant.
const counter = Manifest.parse({
  module: "counter",
  bundles: [{ name: "daemon", language: "typescript", entrypoints: ["src/daemon.ts"] }],
  processes: [{ name: "counter", bundle: "daemon" }],
  states: [{ name: "counts", readable: true }],
  "own-secrets": { broker: { path: "broker.json" } },
});
const password = "counter-password-0123456789";

let server: TestServer;
let admin: MeshBus;
let dir: string;
let credentialFile: string;

before(async () => {
  const { permissions } = moduleGrant({ node: "n1", manifest: counter, owners: { counter } });
  server = await startTestServer({ users: [{ user: "n1.counter", password, permissions }] });
  admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "n1", module: "controller" }),
  );
  await ensureLayout(admin);
  await createBucket(admin, stateBucket("counter", "counts"), { history: 1 });
  await createBucket(admin, stateBucket("other", "secrets"), { history: 1 });
  dir = await mkdtemp(join(tmpdir(), "mesh-sdk-process-"));
  credentialFile = join(dir, "broker.json");
  await writeCredential(
    credentialFile,
    credentialFor(server, { user: "n1.counter", password }, { node: "n1", module: "counter" }),
  );
});

after(async () => {
  await admin?.close();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

test("a process reads and writes its own state as its module", async () => {
  await using mesh = await connectProcess({ credentialFile });
  assert.equal(mesh.module, "counter");
  await mesh.state("counts").put("total", 41);
  assert.equal(await mesh.state("counts").get("total"), 41);
  assert.deepEqual(await mesh.state("counts").keys(), ["total"]);
  const seen = await (
    await KvBucket.openWith(admin, stateBucket("counter", "counts"), z.json())
  ).get("total");
  assert.equal(seen?.value, 41);
});

test("a process cannot touch a state its manifest does not declare", async () => {
  await using mesh = await connectProcess({ credentialFile });
  await assert.rejects(mesh.state("other/secrets").get("x"), (e) =>
    isMeshError(e, ErrorCode.PERMISSION_DENIED),
  );
  await assert.rejects(mesh.state("other/secrets").put("x", 1), (e) =>
    isMeshError(e, ErrorCode.PERMISSION_DENIED),
  );
});

/**
 * The first message the admin reads on `stream` under `filter`, within a deadline; the read is
 * stopped once it is in (or the deadline passed).
 */
async function firstMessage<T>(
  stream: string,
  filter: string,
  schema: z.ZodType<T>,
  what: string,
): Promise<T | undefined> {
  const stop = new AbortController();
  const read = readStream(admin, stream, { filter, schema, signal: stop.signal });
  try {
    return await deadline(
      (async () => {
        for await (const item of read) if (item.type === "message") return item.value;
        return undefined;
      })(),
      10_000,
      what,
    );
  } finally {
    stop.abort();
  }
}

test("what the process keeps reaches the keeps stream, and its conditions the conditions stream", async () => {
  await using mesh = await connectProcess({ credentialFile });
  mesh.keeps([{ name: "counts", readable: true }]);
  await mesh.condition("started", "info", "counting from 41");
  const said = await firstMessage(Stream.keeps, "mesh.keeps.n1.counter", Keeps, "counter's keeps");
  assert.deepEqual(said?.states, [{ name: "counts", readable: true }]);
  const condition = await firstMessage(
    Stream.conditions,
    "mesh.conditions.counter.started",
    Condition,
    "counter's condition",
  );
  assert.equal(condition?.message, "counting from 41");
  assert.equal(condition?.node, "n1");
});

test("without MESH_BROKER_FILE the process is told what to declare", async () => {
  const saved = process.env["MESH_BROKER_FILE"];
  delete process.env["MESH_BROKER_FILE"];
  try {
    await assert.rejects(connectProcess(), (e) => isMeshError(e, ErrorCode.CREDENTIAL_INVALID));
  } finally {
    if (saved !== undefined) process.env["MESH_BROKER_FILE"] = saved;
  }
});
