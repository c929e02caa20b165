import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { toolSubject, type Credential } from "@mesh/protocol";
import { MeshBus } from "./mesh-bus.js";
import { serve } from "./services.js";
import { ToolMetadata, discoverTools } from "./tool-discovery.js";
import { startTestServer, type TestServer } from "./testing/harness.js";

function credential(server: TestServer): Credential {
  return {
    servers: [server.url],
    user: server.admin.user,
    password: server.admin.password,
    node: "n1",
    module: "controller",
  };
}

describe("discoverTools", () => {
  let server: TestServer;
  let bus: MeshBus;

  before(async () => {
    server = await startTestServer();
    bus = await MeshBus.connect(credential(server));
  });
  after(async () => {
    await bus?.close();
    await server?.stop();
  });

  it("is an empty list when nothing serves", async () => {
    assert.deepEqual(await discoverTools(bus, { maxWaitMs: 500 }), []);
  });

  it("finds each tool with its node, module and schemas, and reports a schema that is not JSON", async () => {
    const input = { type: "object", properties: { name: { type: "string" } } };
    const handler = () => Promise.resolve({ ok: true });
    await using _hello = await serve(bus, {
      name: "hello",
      version: "1.0.0",
      endpoints: [
        {
          name: "greet",
          subject: toolSubject("n1", "hello", "greet"),
          metadata: {
            [ToolMetadata.description]: "Greets",
            [ToolMetadata.input]: JSON.stringify(input),
          },
          handler,
        },
        {
          name: "bad",
          subject: toolSubject("n1", "hello", "bad"),
          metadata: { [ToolMetadata.input]: "{not json" },
          handler,
        },
      ],
    });
    // A service that is not a tool runtime is left out.
    await using _other = await serve(bus, {
      name: "other",
      version: "1.0.0",
      endpoints: [{ name: "x", subject: "elsewhere.x", handler }],
    });
    const tools = await discoverTools(bus);
    assert.deepEqual(
      tools.map((t) => `${t.node}/${t.module}/${t.tool}`),
      ["n1/hello/bad", "n1/hello/greet"],
    );
    const greet = tools.find((t) => t.tool === "greet");
    assert.equal(greet?.description, "Greets");
    assert.deepEqual(greet?.input, input);
    assert.deepEqual(greet?.problems, []);
    const bad = tools.find((t) => t.tool === "bad");
    assert.equal(bad?.input, undefined);
    assert.equal(bad?.problems.length, 1);
  });
});
