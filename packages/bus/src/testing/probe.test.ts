import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MeshBus } from "../mesh-bus.js";
import { credentialFor, startTestServer, type TestServer } from "./harness.js";
import { maySubscribe } from "./probe.js";

describe("maySubscribe", () => {
  let server: TestServer;
  let bus: MeshBus;
  before(async () => {
    server = await startTestServer({
      users: [
        {
          user: "n1.probe",
          password: "probe-password",
          permissions: {
            publish: { deny: [">"] },
            subscribe: { allow: ["_INBOX.n1.probe.>", "allowed.>"] },
          },
        },
      ],
    });
    bus = await MeshBus.connect(
      credentialFor(
        server,
        { user: "n1.probe", password: "probe-password" },
        { node: "n1", module: "probe" },
      ),
    );
  });
  after(async () => {
    await bus.close();
    await server.stop();
  });

  it("says yes to a granted subject and no to another, and the connection stays up", async () => {
    assert.equal(await maySubscribe(bus, "allowed.x"), true);
    assert.equal(await maySubscribe(bus, "forbidden.x"), false);
    assert.equal(await maySubscribe(bus, "allowed.y"), true);
  });
});
