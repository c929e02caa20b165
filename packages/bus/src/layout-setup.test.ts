import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  Bucket,
  BucketSpec,
  ErrorCode,
  ObjectStore,
  Stream,
  StreamSpec,
  inboxPrefix,
  kvStreamName,
} from "@mesh/protocol";
import { ensureLayout } from "./layout-setup.js";
import { MeshBus } from "./mesh-bus.js";
import { credentialFor, startTestServer, type TestServer } from "./testing/harness.js";
import { hasCode } from "./testing/has-code.js";
import { natsOf } from "./mesh-bus.js";

const everything = [
  ...Object.values(Bucket),
  ...Object.values(ObjectStore),
  ...Object.values(Stream),
].sort();

const module = { user: "n1-alpha", password: "alpha-pw" };

let server: TestServer;
let admin: MeshBus;

before(async () => {
  server = await startTestServer({
    users: [
      {
        ...module,
        // May read stream info (so the failure is the create, not the look-up) and no more.
        permissions: {
          publish: { allow: ["$JS.API.STREAM.INFO.>"] },
          subscribe: { allow: [`${inboxPrefix("n1", "alpha")}.>`] },
        },
      },
    ],
  });
  admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "n0", module: "controller" }),
  );
});

after(async () => {
  await admin?.close();
  await server?.stop();
});

describe("ensureLayout", () => {
  it("refuses a credential that may not create streams with PERMISSION_DENIED", async () => {
    const bus = await MeshBus.connect(
      credentialFor(server, module, { node: "n1", module: "alpha" }),
    );
    try {
      await assert.rejects(ensureLayout(bus), hasCode(ErrorCode.PERMISSION_DENIED));
    } finally {
      await bus.close();
    }
  });

  it("creates every bucket, stream and store, then finds them all and creates nothing", async () => {
    const first = await ensureLayout(admin);
    assert.deepEqual([...first.created].sort(), everything);
    assert.deepEqual(first.found, []);
    const second = await ensureLayout(admin);
    assert.deepEqual(second.created, []);
    assert.deepEqual([...second.found].sort(), everything);
  });

  it("creates them as the layout specifies", async () => {
    const jsm = await jetstreamManager(natsOf(admin).nc);
    const have = await jsm.streams.info(kvStreamName(Bucket.have));
    assert.equal(have.config.max_msgs_per_subject, BucketSpec[Bucket.have].history);
    // Gets by key in the subject, which the credentials are granted (docs/nats.md §1.2).
    assert.equal(have.config.allow_direct, true);
    const conditions = await jsm.streams.info(Stream.conditions);
    assert.deepEqual(conditions.config.subjects, [...StreamSpec[Stream.conditions].subjects]);
    assert.equal(conditions.config.max_msgs_per_subject, 1);
  });
});
