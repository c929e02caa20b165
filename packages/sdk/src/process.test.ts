import { after, before, test } from "node:test";
import assert from "node:assert/strict";
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
import { KvBucket, readStream } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { connectProcess } from "./process.js";
import { moduleSuite } from "./test-support.js";

// counter keeps `counts` (readable); the process speaks with counter's own grant.
const counter = Manifest.parse({
  module: "counter",
  bundles: [{ name: "daemon", language: "typescript", entrypoints: ["src/daemon.ts"] }],
  processes: [{ name: "counter", bundle: "daemon" }],
  states: [{ name: "counts", readable: true }],
  "own-secrets": { broker: { path: "broker.json" } },
});

const fx = moduleSuite(
  { manifest: counter, otherStates: [["other", "secrets"]] },
  { before, after },
);

test("a process reads and writes its own state as its module", async () => {
  await using mesh = await connectProcess({ credentialFile: fx.credentialFile });
  assert.equal(mesh.module, "counter");
  await mesh.state("counts").put("total", 41);
  assert.equal(await mesh.state("counts").get("total"), 41);
  assert.deepEqual(await mesh.state("counts").keys(), ["total"]);
  const seen = await (
    await KvBucket.openWith(fx.admin, stateBucket("counter", "counts"), z.json())
  ).get("total");
  assert.equal(seen?.value, 41);
});

test("a process cannot touch a state its manifest does not declare", async () => {
  await using mesh = await connectProcess({ credentialFile: fx.credentialFile });
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
  const read = readStream(fx.admin, stream, { filter, schema, signal: stop.signal });
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
  await using mesh = await connectProcess({ credentialFile: fx.credentialFile });
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
