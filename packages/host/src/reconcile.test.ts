/**
 * The host as a reconciler (decision 0110): a pass that failed is asked for again after `retryMs`
 * on its queue, with nothing new on the bus — the host holds no timer of its own for it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { KvBucket } from "@mesh/bus";
import { Bucket, ErrorCode } from "@mesh/protocol";
import {
  LONG_RUNNING,
  bundleOf,
  busAndRoot,
  processResource,
  secretNeed,
  waitFor,
  withHost,
} from "./test-support.js";

const NODE = "r1";
const fx = busAndRoot([NODE]);

test("a failed apply is applied again by itself after retryMs, with nothing new on the bus", async () => {
  const { bus } = fx;
  const have = await KvBucket.open(bus.admin, Bucket.have);
  const haveOf = async (module: string) => (await have.get(`${NODE}.${module}`))?.value;
  await withHost(bus, { node: NODE, retryMs: 500 }, async (_host, root) => {
    const presence = await KvBucket.open(bus.admin, Bucket.presence);
    const publicKey = await waitFor(
      "presence",
      async () => (await presence.get(NODE))?.value.publicKey,
    );
    const need = secretNeed({ root, module: "app", name: "token", publicKey, value: "s3cret" });
    // A file the host did not write stands where the need goes: the apply refuses it.
    await mkdir(dirname(need.path), { recursive: true });
    await writeFile(need.path, "the machine's own");
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    const app = processResource({ root, module: "app", name: "p", digest });
    await bus.compose(NODE, [need, app]);
    const refused = await waitFor("app failing", async () => {
      const now = await haveOf("app");
      return now?.health === "failing" ? now : undefined;
    });
    assert.equal(refused.lastErrorCode, ErrorCode.REFUSED, JSON.stringify(refused));
    assert.equal(await readFile(need.path, "utf8"), "the machine's own");

    // Moved away by its owner; nothing changes on the bus: the pass asked again after retryMs
    // writes the need and starts the process.
    await rm(need.path);
    await waitFor("app healthy", async () => (await haveOf("app"))?.health === "healthy");
    assert.equal(await readFile(need.path, "utf8"), "s3cret");
    assert.equal((await stat(need.path)).mode & 0o777, 0o600);
  });
});
