/**
 * Provision through the real host's provisioner client (DESIGN.md "One change, end to end",
 * step 10 without the controller): the host answers the runtime from its node's composition and
 * mesh-config, says when a value moved, and the runtime hands the change to the watching module.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus, request } from "@mesh/bus";
import { credentialFor, deadline } from "@mesh/bus/testing";
import { fingerprintOf, hostGrant } from "@mesh/core";
import { Host } from "@mesh/host";
import {
  Bucket,
  ErrorCode,
  Principal,
  isMeshError,
  toolSubject,
  type ComposedModule,
} from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import { Runtime } from "./runtime.js";
import { ALPHA_MORE, ALPHA_TOOLS, writeModule } from "./test-support/modules.js";
import { NODE, StatusLog, served, startTestBus, type TestBus } from "./test-support/setup.js";

const WAIT = 20_000;
const HOST = { user: "host", password: "host-password-for-tests" };
const APP: ComposedModule = { build: "b1", config: { greeting: { default: "hello" } }, bound: {} };

describe("provision through the host's provisioner client", () => {
  let bus: TestBus;
  let dir: string;
  let host: Host;
  let hostRunning: Promise<void>;
  let runtimeBus: MeshBus;
  let runtime: Runtime;
  const statuses = new StatusLog();

  const compose = async (modules: Record<string, ComposedModule>) => {
    const composed = await KvBucket.open(bus.admin, Bucket.composed);
    await composed.put(NODE, {
      node: NODE,
      resources: [],
      modules,
      fingerprint: fingerprintOf([]),
    });
  };
  const setConfig = async (key: string, value: unknown) => {
    const config = await KvBucket.open(bus.admin, Bucket.config);
    await config.put(key, { value: value as never, by: "ada", at: new Date().toISOString() });
  };
  const call = (tool: string, input: unknown) =>
    request(bus.admin, toolSubject(NODE, "app", tool), input, { timeoutMs: 10_000 });
  const seen = async (count: number) =>
    ((await call("seen", { count })) as { seen: unknown[] }).seen;

  before(async () => {
    bus = await startTestBus({
      modules: [served("app")],
      users: [{ ...HOST, permissions: hostGrant({ node: NODE }) }],
    });
    dir = await mkdtemp(join(tmpdir(), "mesh-runtime-host-"));
    await compose({ app: APP });
    host = Host.create({
      node: NODE,
      root: join(dir, "host"),
      credential: credentialFor(bus.server, HOST, { node: NODE, module: Principal.host }),
      pollMs: 100,
      log: () => undefined,
    });
    hostRunning = host.run();
    const entries = await writeModule(dir, "app", {
      "tools.mjs": ALPHA_TOOLS,
      "more.mjs": ALPHA_MORE,
    });
    runtimeBus = await MeshBus.connect(bus.runtimeCredential);
    // The module's load asks for its greeting; until the host has read its composition, that is
    // refused and the module is restarted: serving is the event that says the host answers.
    runtime = Runtime.create({
      bus: runtimeBus,
      modules: new Map([["app", entries]]),
      tuning: { initialBackoffMs: 50, maxBackoffMs: 200 },
      onStatus: statuses.push,
      log: () => undefined,
    });
    await deadline(
      statuses.until((s) => s.modules["app"]?.state === ModuleState.serving),
      WAIT,
      "app serving",
    );
  });

  after(async () => {
    await runtime?.stop();
    await runtimeBus?.close();
    await host?.stop();
    await hostRunning;
    await bus?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test("get: a config default and a bound value, answered by the host for the module", async () => {
    assert.deepEqual(await call("value", { kind: "config", key: "greeting" }), { value: "hello" });
    assert.deepEqual(await call("value", { kind: "bound", key: "node" }), { value: NODE });
    await assert.rejects(call("value", { kind: "config", key: "undeclared" }), (error: unknown) =>
      isMeshError(error, ErrorCode.REFUSED),
    );
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
    await setConfig("app.greeting", "Hi");
    assert.deepEqual((await seen(2))[1], { value: "Hi" });
    await setConfig(`app.greeting.${NODE}`, "Hey");
    assert.deepEqual((await seen(3))[2], { value: "Hey" });
    assert.deepEqual(await call("greet", { name: "Ada" }), { text: "Hey, Ada" });
  });

  test("a module taken off the node ends its watch's values with the host's reason", async () => {
    const before = (await seen(1)).length;
    await compose({});
    const refused = (await seen(before + 1))[before] as { refused?: string };
    assert.match(refused.refused ?? "", /not composed on n1/);
  });
});
