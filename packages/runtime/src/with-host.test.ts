/**
 * The runtime started before its host has read the node's composition, then provision through
 * the real host's client (docs/design.md "One change, end to end", step 10 without the controller):
 * the module's load is refused until the host answers, is restarted, and serves; config set
 * mesh-wide and for the node reaches the watching module; taking the module off the node ends
 * its watch's values with the host's reason.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { discoverTools, request } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import { ErrorCode, isMeshError, toolSubject, type ComposedModule } from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import { HOST_USER, startHostClient, type HostClient } from "./test-support/host-client.js";
import { ALPHA_MORE, ALPHA_TOOLS } from "./test-support/modules.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { startTestRuntime, type TestRuntime } from "./test-support/test-runtime.js";

const WAIT = 20_000;
const APP: ComposedModule = { build: "b1", config: { greeting: { default: "hello" } }, bound: {} };

describe("provision through the host's provisioner client", () => {
  let bus: TestBus;
  let host: HostClient;
  let rt: TestRuntime;

  const call = (tool: string, input: unknown) =>
    request(bus.admin, toolSubject(NODE, "app", tool), input, { timeoutMs: 10_000 });
  const seen = async (count: number) =>
    ((await call("seen", { count })) as { seen: unknown[] }).seen;

  before(async () => {
    bus = await startTestBus({
      modules: [served("app")],
      users: [{ ...HOST_USER, permissions: hostGrant({ node: NODE }) }],
    });
    // Started first: the module's load asks for its greeting, which nothing answers yet, so it
    // fails and is restarted until the host answers; serving is the event that says it does.
    rt = await startTestRuntime(bus, {
      name: "mesh-runtime-host-",
      modules: { app: { "tools.mjs": ALPHA_TOOLS, "more.mjs": ALPHA_MORE } },
      runtime: { tuning: { initialBackoffMs: 50, maxBackoffMs: 200 } },
    });
    await deadline(
      rt.statuses.inState("app", ModuleState.failing),
      WAIT,
      "app failing to load while nothing answers its asks",
    );
    host = await startHostClient({ bus, node: NODE, modules: { app: APP } });
    await deadline(rt.statuses.inState("app", ModuleState.serving), WAIT, "app serving");
  });

  after(async () => {
    await rt?.stop();
    await host?.stop();
    await bus?.stop();
  });

  test("the module was restarted until the host answered", () => {
    assert.ok((rt.statuses.latest?.modules["app"]?.restarts ?? 0) >= 1);
  });

  test("get: a config default and a bound value, answered by the host for the module", async () => {
    assert.deepEqual(await call("value", { kind: "config", key: "greeting" }), { value: "hello" });
    assert.deepEqual(await call("value", { kind: "bound", key: "node" }), { value: NODE });
    await assert.rejects(call("value", { kind: "config", key: "undeclared" }), (error: unknown) =>
      isMeshError(error, ErrorCode.REFUSED),
    );
  });

  test("the module's service reports the module's build as its version", async () => {
    const tools = await discoverTools(bus.admin);
    const app = tools.filter((t) => t.module === "app");
    assert.ok(app.length > 0, "app's tools are discovered");
    for (const tool of app) assert.equal(tool.service.version, "0.0.0+b1");
  });

  test("a secret is refused by the runtime with the reason", async () => {
    await assert.rejects(call("value", { kind: "secret", key: "token" }), (error: unknown) => {
      assert.ok(isMeshError(error, ErrorCode.REFUSED));
      assert.match(error.message, /file/);
      return true;
    });
  });

  test("mesh-wide and node config changes reach the watching module's code", async () => {
    assert.deepEqual((await seen(1))[0], { value: "hello" });
    await host.setConfig("app.greeting", "Hi");
    assert.deepEqual((await seen(2))[1], { value: "Hi" });
    await host.setConfig(`app.greeting.${NODE}`, "Hey");
    assert.deepEqual((await seen(3))[2], { value: "Hey" });
    assert.deepEqual(await call("greet", { name: "Ada" }), { text: "Hey, Ada" });
  });

  test("a module taken off the node ends its watch's values with the host's reason", async () => {
    const before = (await seen(1)).length;
    await host.compose({});
    const refused = (await seen(before + 1))[before] as { refused?: string };
    assert.match(refused.refused ?? "", /not composed on n1/);
  });
});
