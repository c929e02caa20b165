import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  ErrorCode,
  MeshError,
  ObjectStore,
  inboxPrefix,
  objStreamName,
  type Permissions,
} from "@mesh/protocol";
import { ArtifactStore } from "./artifacts.js";
import type { MeshBus } from "./mesh-bus.js";
import { PROMPT_MS, deadline } from "./testing/harness.js";
import { busSuite } from "./testing/fixtures.js";
import { hasCode } from "./testing/has-code.js";
import { natsOf } from "./mesh-bus.js";

// 20 MiB over loopback takes well under a second; without `$JS.FC` it never finishes.
const LARGE_MS = 30_000;

const store = ObjectStore.artifacts;
const stream = objStreamName(store);

/** Reads the object store: get, info, list (docs/nats.md §1.2 (c)). */
const readerGrant: Permissions = {
  publish: {
    allow: [
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.STREAM.MSG.GET.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.*.$O.${store}.>`,
      `$JS.FC.${stream}.>`,
    ],
  },
  subscribe: { allow: [`${inboxPrefix("n1", "host")}.>`] },
};

const reader = { user: "n1-host", password: "host-pw" };

const fx = busSuite(
  {
    module: "controller",
    layout: true,
    users: [{ ...reader, permissions: readerGrant }],
    setUp: async () => {
      artifacts = await ArtifactStore.open(fx.admin);
      readerBus = await fx.connect(reader, { node: "n1", module: "host" });
    },
  },
  { before, after },
);
let readerBus: MeshBus;
let artifacts: ArtifactStore;

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");
const UNKNOWN = sha256(new TextEncoder().encode("never stored"));

async function storedMessages(): Promise<number> {
  const jsm = await jetstreamManager(natsOf(fx.admin).nc);
  return (await jsm.streams.info(stream)).state.messages;
}

describe("ArtifactStore", () => {
  it("stores bytes under their SHA-256 and gives them back", async () => {
    const bytes = new TextEncoder().encode("a bundle archive");
    const info = await artifacts.put(bytes);
    assert.deepEqual(info, { digest: sha256(bytes), size: bytes.byteLength });
    assert.deepEqual(await artifacts.info(info.digest), info);
    const got = await artifacts.get(info.digest);
    assert.ok(got !== undefined);
    // The client hands a Buffer, a Uint8Array of its own class: compare the bytes.
    assert.deepEqual(new Uint8Array(got), bytes);
  });

  it("stores the same bytes once, however often they are put", async () => {
    const bytes = new TextEncoder().encode("the same archive");
    const first = await artifacts.put(bytes);
    const messages = await storedMessages();
    const second = await artifacts.put(bytes);
    assert.deepEqual(second, first);
    assert.equal(await storedMessages(), messages);
  });

  it("hands undefined for a digest it does not hold", async () => {
    assert.equal(await artifacts.get(UNKNOWN), undefined);
    assert.equal(await artifacts.info(UNKNOWN), undefined);
  });

  it("refuses a digest that is not a lowercase SHA-256 with INVALID_KEY", async () => {
    await assert.rejects(
      artifacts.get("../etc/passwd"),
      (error: unknown) => error instanceof MeshError && error.code === ErrorCode.INVALID_KEY,
    );
  });

  it("hands a 20 MiB artifact to a credential with the read grant", async () => {
    const bytes = randomBytes(20 * 1024 * 1024);
    const { digest, size } = await artifacts.put(bytes);
    assert.equal(size, bytes.byteLength);
    const store = await ArtifactStore.open(readerBus);
    assert.deepEqual(await store.info(digest), { digest, size });
    const got = await deadline(store.get(digest), LARGE_MS, "the 20 MiB get");
    assert.ok(got !== undefined);
    assert.equal(got.byteLength, bytes.byteLength);
    assert.equal(sha256(got), digest);
  });

  it("refuses a put by a credential with only the read grant with PERMISSION_DENIED", async () => {
    const store = await ArtifactStore.open(readerBus);
    const messages = await storedMessages();
    await assert.rejects(
      deadline(store.put(new TextEncoder().encode("smuggled")), PROMPT_MS, "the refusal"),
      hasCode(ErrorCode.PERMISSION_DENIED),
    );
    assert.equal(await storedMessages(), messages);
  });
});
