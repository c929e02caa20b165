import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { MeshBus } from "./mesh-bus.js";
import { flush, publish } from "./publish.js";
import { credentialFor, deadline, startTestServer, type TestServer } from "./testing/harness.js";

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.stop());

test("a published message reaches a subscriber as JSON", async () => {
  const bus = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "n1", module: "t" }),
  );
  try {
    const messages = bus.subscribe("pub.test");
    const first = messages.next();
    await flush(bus);
    publish(bus, "pub.test", { hello: "world" });
    const got = await deadline(first, 10_000, "the message");
    assert.deepEqual(got.value?.json(), { hello: "world" });
    await messages.return(undefined);
  } finally {
    await bus.close();
  }
});

test("publishing on a closed connection says CONNECT_FAILED", async () => {
  const bus = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "n1", module: "t" }),
  );
  await bus.close();
  assert.throws(
    () => publish(bus, "pub.test", {}),
    (e: unknown) => isMeshError(e, ErrorCode.CONNECT_FAILED),
  );
});
