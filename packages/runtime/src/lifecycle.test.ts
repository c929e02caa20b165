/**
 * How a runtime comes and goes without a caller noticing, on a real nats-server with real
 * workers: an idle module's worker stopped and started again by the next call (its service
 * registered all along), a drain that answers every call already sent, and two runtimes serving
 * one module in the same queue group while the older one drains.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { MeshBus, discoverTools, request } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { CallHeader, isMeshError, toolSubject } from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import { Runtime, type RuntimeStatus } from "./runtime.js";
import { STEADY, writeModule } from "./test-support/modules.js";
import { NODE, StatusLog, served, startTestBus, type TestBus } from "./test-support/setup.js";

const WAIT = 20_000;

describe("a runtime's lifecycle", () => {
  let bus: TestBus;
  let dir: string;
  let modules: Map<string, string[]>;
  const open: Array<{ runtime: Runtime; bus: MeshBus }> = [];

  const call = (tool: string, input: unknown, module = "steady") =>
    request(bus.admin, toolSubject(NODE, module, tool), input, {
      timeoutMs: 15_000,
      headers: { [CallHeader.timeoutMs]: "10000" },
    });

  const start = async (
    options: { idleMs?: number; idle?: Map<string, number> } = {},
  ): Promise<{ runtime: Runtime; statuses: StatusLog }> => {
    const statuses = new StatusLog();
    const runtimeBus = await MeshBus.connect(bus.runtimeCredential);
    const runtime = Runtime.create({
      bus: runtimeBus,
      modules,
      ...(options.idle === undefined ? {} : { idle: options.idle }),
      tuning: { ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }) },
      onStatus: statuses.push,
      log: () => undefined,
    });
    open.push({ runtime, bus: runtimeBus });
    await deadline(statuses.until(allServing), WAIT, "every module serving");
    return { runtime, statuses };
  };

  const allServing = (s: RuntimeStatus) =>
    Object.values(s.modules).every((m) => m.state === ModuleState.serving);

  before(async () => {
    bus = await startTestBus({ modules: [served("steady"), served("other")] });
    dir = await mkdtemp(join(tmpdir(), "mesh-runtime-lifecycle-"));
    modules = new Map([
      ["steady", await writeModule(dir, "steady", { "tools.mjs": STEADY })],
      ["other", await writeModule(dir, "other", { "tools.mjs": STEADY })],
    ]);
  });

  after(async () => {
    for (const { runtime, bus: b } of open) {
      await runtime.stop();
      await b.close();
    }
    await bus?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test("an idle module's worker stops, its service stays, and the next call starts it", async () => {
    const { runtime, statuses } = await start({ idleMs: 300, idle: new Map([["other", 0]]) });
    const idle = await deadline(statuses.inState("steady", ModuleState.idle), WAIT, "steady idle");
    assert.equal(runtime.module("steady")?.threadId, undefined, "its worker is stopped");
    assert.equal(idle.modules["other"]?.state, ModuleState.serving, "0 is never idle");
    const tools = await discoverTools(bus.admin, { maxWaitMs: 1_000 });
    assert.ok(
      tools.some((t) => t.module === "steady" && t.tool === "ping"),
      "the service is still registered while idle",
    );
    const started = performance.now();
    const answer = (await call("ping", { cold: true })) as { input: unknown };
    const coldMs = performance.now() - started;
    console.log(`cold call after idle: ${coldMs.toFixed(1)} ms`);
    assert.deepEqual(answer.input, { cold: true });
    assert.equal(runtime.module("steady")?.status.state, ModuleState.serving);
    assert.equal(runtime.module("steady")?.status.restarts, 0, "waking is not a restart");
    await runtime.stop();
  });

  test("a drain answers every call already sent, then stops taking calls", async () => {
    const { runtime } = await start({ idleMs: 0 });
    const calls = Array.from({ length: 16 }, (_, i) => call("slow", { ms: 300 + i }));
    // Every call is in a worker before the drain starts.
    await deadline(
      (async () => {
        while ((runtime.module("steady")?.inFlight ?? 0) < 16) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })(),
      WAIT,
      "16 calls in flight",
    );
    await runtime.drain();
    const answers = (await Promise.all(calls)) as Array<{ waited: number }>;
    assert.deepEqual(
      answers.map((a) => a.waited),
      Array.from({ length: 16 }, (_, i) => 300 + i),
    );
    await assert.rejects(call("ping", {}), (e) => isMeshError(e));
  });

  test("two runtimes in one queue group: calls keep being answered while the older drains", async () => {
    const older = await start({ idleMs: 0 });
    let failed = 0;
    let answered = 0;
    let stop = false;
    const callers = Array.from({ length: 16 }, async () => {
      while (!stop) {
        try {
          await call("slow", { ms: 20 });
          answered += 1;
        } catch {
          failed += 1;
        }
      }
    });
    const newer = await start({ idleMs: 0 });
    await older.runtime.drain();
    const before = answered;
    await deadline(
      (async () => {
        while (answered < before + 64) await new Promise((resolve) => setTimeout(resolve, 10));
      })(),
      WAIT,
      "the newer runtime answering alone",
    );
    stop = true;
    await Promise.all(callers);
    console.log(`handover between runtimes: ${answered} calls answered, ${failed} failed`);
    assert.equal(failed, 0);
    await newer.runtime.stop();
  });
});
