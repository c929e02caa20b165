/**
 * The runtime against a real nats-server, with real worker threads: two modules (and a third
 * that hangs) in one runtime whose bus user holds exactly `runtimeGrant`, their values asked of
 * the real host's provisioner client (with a wiretap that records every ask).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus, discoverTools, flush, request } from "@mesh/bus";
import { createBucket, credentialFor, deadline, forgeDelivery } from "@mesh/bus/testing";
import { hostGrant, moduleGrant } from "@mesh/core";
import type { ComposedModule, MeshError } from "@mesh/protocol";
import {
  CallHeader,
  ErrorCode,
  LogLine,
  isMeshError,
  logsSubject,
  toolSubject,
} from "@mesh/protocol";
import { z } from "zod";
import { Runtime, type RuntimeStatus } from "./runtime.js";
import { ModuleState } from "./module-worker.js";
import { HOST_USER, startHostClient, type HostClient } from "./test-support/host-client.js";
import { ALPHA_MORE, ALPHA_TOOLS, BETA, GAMMA } from "./test-support/modules.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { startTestRuntime, type TestRuntime } from "./test-support/test-runtime.js";

const WAIT = 15_000;
const ALPHA = served("alpha", { states: [{ name: "notes", readable: true }] });
const GAMMA_MANIFEST = served("gamma", { reads: ["alpha/notes"] });
/** What the host answers from: each module's declared config and bound values. */
const ALPHA_COMPOSED: ComposedModule = { config: { greeting: { default: "Hello" } }, bound: {} };
const COMPOSED: Record<string, ComposedModule> = {
  alpha: ALPHA_COMPOSED,
  beta: { config: { color: { default: "blue" } }, bound: {} },
  gamma: { config: {}, bound: { "read.alpha.notes": "alpha_notes" } },
};
const ALPHA_PROCESS = { user: "alpha-process", password: "alpha-process-password" };

describe("the runtime", () => {
  let bus: TestBus;
  let rt: TestRuntime;
  let provisioner: HostClient;
  const rejected: Array<{ why: string; subject: string }> = [];
  let onRejected: (() => void) | undefined;

  const call = (module: string, tool: string, input: unknown, timeoutMs?: number) =>
    request(bus.admin, toolSubject(NODE, module, tool), input, {
      timeoutMs: 10_000,
      ...(timeoutMs === undefined
        ? {}
        : { headers: { [CallHeader.timeoutMs]: String(timeoutMs) } }),
    });

  const failsWith = async (promise: Promise<unknown>, code: string): Promise<MeshError> => {
    try {
      await promise;
    } catch (error) {
      assert.ok(isMeshError(error), `not a MeshError: ${String(error)}`);
      assert.equal(error.code, code, error.message);
      return error;
    }
    assert.fail(`expected ${code}, got an answer`);
  };

  const allServing = (s: RuntimeStatus) =>
    Object.values(s.modules).every((m) => m.state === ModuleState.serving);

  before(async () => {
    bus = await startTestBus({
      modules: [ALPHA, served("beta"), GAMMA_MANIFEST],
      owners: { alpha: ALPHA },
      users: [
        {
          ...ALPHA_PROCESS,
          permissions: moduleGrant({ node: NODE, manifest: ALPHA, owners: {} }).permissions,
        },
        { ...HOST_USER, permissions: hostGrant({ node: NODE }) },
      ],
    });
    await createBucket(bus.admin, "alpha_notes", { history: 1 });
    provisioner = await startHostClient({ bus, node: NODE, modules: COMPOSED });
    rt = await startTestRuntime(bus, {
      name: "mesh-runtime-",
      modules: {
        alpha: { "tools.mjs": ALPHA_TOOLS, "more.mjs": ALPHA_MORE },
        beta: { "tools.mjs": BETA },
        gamma: { "tools.mjs": GAMMA },
      },
      runtime: {
        tuning: {
          heartbeatMs: 100,
          hangMs: 1_000,
          initialBackoffMs: 50,
          defaultTimeoutMs: 5_000,
          resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
        },
        onRejected: (why, subject) => {
          rejected.push({ why, subject });
          onRejected?.();
        },
      },
    });
    await deadline(rt.statuses.until(allServing), WAIT, "every module serving");
  });

  after(async () => {
    await rt?.stop();
    await provisioner?.stop();
    await bus?.stop();
  });

  test("discovery lists a module's tools with their description and schemas", async () => {
    const tools = await discoverTools(bus.admin, { maxWaitMs: 1_000 });
    const alpha = tools.filter((t) => t.module === "alpha" && t.node === NODE);
    const greet = alpha.find((t) => t.tool === "greet");
    const add = alpha.find((t) => t.tool === "add");
    assert.ok(greet !== undefined && add !== undefined, JSON.stringify(tools));
    assert.equal(greet.subject, toolSubject(NODE, "alpha", "greet"));
    assert.match(greet.description, /Greets/);
    const input = greet.input as { properties: Record<string, unknown>; required: string[] };
    assert.deepEqual(Object.keys(input.properties).sort(), ["name", "times"]);
    assert.deepEqual(input.required, ["name"]);
    assert.deepEqual(Object.keys((add.output as { properties: object }).properties), ["sum"]);
    // Both entries of alpha are one service: every tool of both is listed.
    assert.deepEqual(alpha.map((t) => t.tool).sort(), [
      "aborted",
      "add",
      "explode",
      "first",
      "greet",
      "log",
      "missing",
      "note",
      "overrun",
      "seen",
      "value",
      "warn",
    ]);
  });

  test("good input is answered with the handler's result", async () => {
    assert.deepEqual(await call("alpha", "add", { a: 2, b: 3 }), { sum: 5 });
    assert.deepEqual(await call("alpha", "greet", { name: "Ada" }), { text: "Hello, Ada" });
  });

  test("bad input is INVALID_INPUT naming each path, and the handler never runs", async () => {
    const error = await failsWith(
      call("alpha", "greet", { name: 5, times: -1 }),
      ErrorCode.INVALID_INPUT,
    );
    assert.match(error.message, /\bname\b/);
    assert.match(error.message, /\btimes\b/);
    await failsWith(call("alpha", "add", "not an object"), ErrorCode.INVALID_INPUT);
    const header = await failsWith(
      call("alpha", "add", { a: 1, b: 1 }, -5),
      ErrorCode.INVALID_INPUT,
    );
    assert.match(header.message, new RegExp(CallHeader.timeoutMs));
  });

  test("a throwing handler is INTERNAL without its detail, and the runtime keeps serving", async () => {
    const error = await failsWith(call("alpha", "explode", {}), ErrorCode.INTERNAL);
    assert.doesNotMatch(error.message, /kaboom/);
    const refused = await failsWith(call("alpha", "missing", { id: "x1" }), ErrorCode.NOT_FOUND);
    assert.match(refused.message, /x1/);
    assert.deepEqual(await call("alpha", "add", { a: 1, b: 1 }), { sum: 2 });
  });

  test("a call past its deadline is TIMEOUT and the handler's signal aborts", async () => {
    await failsWith(call("alpha", "overrun", {}, 200), ErrorCode.TIMEOUT);
    assert.deepEqual(await call("alpha", "aborted", {}), { reason: "TimeoutError" });
  });

  test("provision: config and bound values are asked of the client as the module", async () => {
    const before = provisioner.asks.length;
    assert.deepEqual(await call("alpha", "value", { kind: "bound", key: "node" }), { value: NODE });
    assert.deepEqual(await call("alpha", "value", { kind: "config", key: "greeting" }), {
      value: "Hello",
    });
    assert.deepEqual(provisioner.asks.slice(before), [
      { module: "alpha", kind: "bound", key: "node" },
      { module: "alpha", kind: "config", key: "greeting" },
    ]);
    const missing = await failsWith(
      call("alpha", "value", { kind: "config", key: "nope" }),
      ErrorCode.REFUSED,
    );
    assert.match(missing.message, /nope/);
  });

  test("a secret ask is refused with the reason and the client is never asked", async () => {
    const before = provisioner.asks.length;
    const error = await failsWith(
      call("alpha", "value", { kind: "secret", key: "api-token" }),
      ErrorCode.REFUSED,
    );
    assert.match(error.message, /secret "api-token"/);
    assert.match(error.message, /file/);
    assert.deepEqual(provisioner.asks.slice(before), []);
  });

  test("module B's code cannot obtain module A's values, whatever it sends", async () => {
    const before = provisioner.asks.length;
    const result = (await call("beta", "steal", {})) as Record<string, Record<string, unknown>>;
    for (const way of ["viaSdk", "viaWatch", "viaState"]) {
      assert.ok(
        [ErrorCode.NOT_FOUND, ErrorCode.REFUSED].includes(result[way]?.["code"] as never),
        `${way}: ${JSON.stringify(result[way])}`,
      );
    }
    assert.equal(result["raw"]?.["t"], "refusal");
    assert.doesNotMatch(JSON.stringify(result), /Hello/);
    const asked = provisioner.asks.slice(before);
    assert.ok(asked.length >= 4, JSON.stringify(asked));
    assert.ok(
      asked.every((ask) => ask.module === "beta"),
      `every ask was made as beta: ${JSON.stringify(asked)}`,
    );
  });

  test("a change reaches a watching module, unchanged values are not handed twice", async () => {
    const seen = async (count: number) =>
      ((await call("alpha", "seen", { count })) as { seen: unknown[] }).seen;
    assert.deepEqual(await seen(1), [{ value: "Hello" }]);
    await provisioner.setConfig("alpha.greeting", "Hi");
    assert.deepEqual((await seen(2))[1], { value: "Hi" });
    // A notice for a value that did not move: the runtime asks again and hands nothing.
    provisioner.sayChanged("alpha", "config", "greeting");
    provisioner.sayChanged("alpha", "config");
    await provisioner.setConfig(`alpha.greeting.${NODE}`, "Hey");
    assert.deepEqual((await seen(3)).slice(1), [{ value: "Hi" }, { value: "Hey" }]);
  });

  test("a refusal ends a watch's values with the reason; a value that comes back is handed", async () => {
    const seen = async (count: number) =>
      ((await call("alpha", "seen", { count })) as { seen: unknown[] }).seen;
    const before = (await seen(1)).length;
    // The greeting no longer declared: the host refuses it from now on.
    await provisioner.compose({ ...COMPOSED, alpha: { ...ALPHA_COMPOSED, config: {} } });
    const refused = (await seen(before + 1))[before] as { refused?: string };
    assert.match(refused.refused ?? "", /declares no config key "greeting"/);
    await provisioner.compose(COMPOSED);
    assert.deepEqual((await seen(before + 2))[before + 1], { value: "Hey" });
  });

  test("leaving a watch's loop stops the watch in the runtime", async () => {
    const before = rt.runtime.provisioner.watchCount;
    assert.deepEqual(await call("alpha", "first", {}), { value: "Hey" });
    assert.equal(rt.runtime.provisioner.watchCount, before);
  });

  test("a JetStream delivery into a tool subject is rejected and the handler never runs", async () => {
    // alpha's own process may create consumers on its own state; it makes one deliver into
    // beta's echo endpoint (queue group q, as NATS services subscribe), docs/nats.md §1.4.3.
    await using alphaProcess = await MeshBus.connect(
      credentialFor(bus.server, ALPHA_PROCESS, { node: NODE, module: "alpha" }),
    );
    const notes = await KvBucket.openWith(alphaProcess, "alpha_notes", z.json());
    await notes.put("forged", { forged: "a command beta never got" });
    const heard = new Promise<void>((resolve) => (onRejected = resolve));
    await forgeDelivery(alphaProcess, {
      stream: "KV_alpha_notes",
      filter: "$KV.alpha_notes.>",
      into: toolSubject(NODE, "beta", "echo"),
    });
    await deadline(heard, WAIT, "the runtime rejecting the delivery");
    assert.ok(
      rejected.some((r) => r.subject === "$KV.alpha_notes.forged"),
      JSON.stringify(rejected),
    );
    assert.deepEqual(await call("beta", "count", {}), { echoes: 0 });
  });

  test("a module keeps its own state and says conditions", async () => {
    assert.deepEqual(await call("alpha", "note", { key: "k", text: "remember" }), {
      read: { text: "remember" },
      keys: ["forged", "k", "k-null"],
      missing: true,
      storedNull: true,
    });
    assert.deepEqual(await call("alpha", "warn", { message: "disk almost full" }), {});
  });

  test("a tool's ctx.log lines are filed under its module, marked as its tools' (issue 14.10)", async () => {
    // Heard as the operator reads them: the stream's subject of the module itself.
    const lines: LogLine[] = [];
    let heard: (() => void) | undefined;
    const stop = new AbortController();
    const messages = bus.admin.subscribe(logsSubject(NODE, "alpha"), { signal: stop.signal });
    void (async () => {
      for await (const m of messages) {
        lines.push(LogLine.parse(m.json()));
        if (lines.length >= 2) heard?.();
      }
    })();
    try {
      await flush(bus.admin);
      const both = new Promise<void>((resolve) => (heard = resolve));
      assert.deepEqual(await call("alpha", "log", { text: "filed under alpha" }), {});
      await deadline(both, WAIT, "alpha's two log lines on mesh.logs.<node>.alpha");
      assert.deepEqual(
        lines.map((l) => [l.process, l.stream, l.line]),
        [
          ["tools", "stdout", "filed under alpha"],
          ["tools", "stderr", "warn: careful: filed under alpha"],
        ],
      );
    } finally {
      stop.abort();
    }
  });

  test("a module reads another's state only as it declares, and may not write it", async () => {
    assert.deepEqual(await call("gamma", "peek", {}), {
      read: { text: "remember" },
      write: ErrorCode.REFUSED,
    });
  });

  test("killing B's worker leaves A's tools answering, and B is restarted", async () => {
    const restartsBefore = rt.runtime.status().modules["beta"]?.restarts ?? 0;
    const failing = rt.statuses.inState("beta", ModuleState.failing);
    await failsWith(call("beta", "crash", {}), ErrorCode.INTERNAL);
    const status = await deadline(failing, WAIT, "beta failing");
    assert.match(status.modules["beta"]?.error ?? "", /exited with code 3/);
    assert.deepEqual(await call("alpha", "add", { a: 20, b: 22 }), { sum: 42 });
    await deadline(
      rt.statuses.until(
        (s) =>
          s.modules["beta"]?.state === ModuleState.serving &&
          (s.modules["beta"]?.restarts ?? 0) > restartsBefore,
      ),
      WAIT,
      "beta serving again",
    );
    assert.deepEqual(await call("beta", "count", {}), { echoes: 0 });
  });

  test("a handler that blocks its worker is a hang: terminated, reported and restarted", async () => {
    const failing = rt.statuses.inState("gamma", ModuleState.failing);
    await failsWith(call("gamma", "block", {}, 300), ErrorCode.TIMEOUT);
    const status = await deadline(failing, WAIT, "gamma failing");
    assert.match(status.modules["gamma"]?.error ?? "", /hung/);
    assert.deepEqual(await call("alpha", "add", { a: 1, b: 2 }), { sum: 3 });
    await deadline(rt.statuses.inState("gamma", ModuleState.serving), WAIT, "gamma serving again");
    assert.deepEqual(await call("gamma", "ok", {}), { ok: true });
  });

  test("an error its code throws outside a handler is a crash: reported and restarted", async () => {
    const failing = rt.statuses.inState("gamma", ModuleState.failing);
    assert.deepEqual(await call("gamma", "fault", {}), {});
    const status = await deadline(failing, WAIT, "gamma failing");
    assert.match(status.modules["gamma"]?.error ?? "", /threw and did not catch.*gamma fault/s);
    await deadline(rt.statuses.inState("gamma", ModuleState.serving), WAIT, "gamma serving again");
    assert.deepEqual(await call("alpha", "add", { a: 2, b: 2 }), { sum: 4 });
  });

  test("a module past its memory limit is ended, reported and restarted; the others serve", async () => {
    const failing = rt.statuses.inState("gamma", ModuleState.failing);
    await failsWith(call("gamma", "hog", {}), ErrorCode.INTERNAL);
    const status = await deadline(failing, WAIT, "gamma failing");
    assert.match(status.modules["gamma"]?.error ?? "", /memory/i);
    assert.deepEqual(await call("alpha", "add", { a: 3, b: 3 }), { sum: 6 });
    await deadline(rt.statuses.inState("gamma", ModuleState.serving), WAIT, "gamma serving again");
  });

  test("a runtime given no modules serves nothing, says so, and stops", async () => {
    const seen: RuntimeStatus[] = [];
    const empty = Runtime.create({
      bus: rt.bus,
      modules: new Map(),
      onStatus: (s) => seen.push(s),
    });
    assert.equal(empty.status().state, "running");
    assert.deepEqual(empty.status().modules, {});
    await empty.stop();
    assert.equal(seen.at(-1)?.state, "stopped");
  });

  test("stopping the runtime stops every watch and reports every module stopped", async () => {
    assert.ok(rt.runtime.provisioner.watchCount > 0);
    await rt.runtime.stop();
    assert.equal(rt.runtime.provisioner.watchCount, 0);
    assert.ok(
      Object.values(rt.runtime.status().modules).every((m) => m.state === ModuleState.stopped),
    );
    await failsWith(call("alpha", "add", { a: 1, b: 1 }), ErrorCode.NOT_FOUND);
  });
});
