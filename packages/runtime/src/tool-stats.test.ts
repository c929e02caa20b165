/**
 * The runtime's count of its tools' calls (decision 0172) on a real nats-server with the layout:
 * calls answered and refused are read back from `mesh-tool-stats` exactly, a quiet window files
 * nothing, and the bus lets the runtime file only its own node's served modules' counts and a
 * module's own credential none.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MeshBus, flush, publish, readStream, request, type BusEvent } from "@mesh/bus";
import { credentialFor, deadline } from "@mesh/bus/testing";
import { moduleGrant } from "@mesh/core";
import {
  ErrorCode,
  Stream,
  ToolStats,
  isMeshError,
  toolStatsSubject,
  toolSubject,
  type ReplyCode,
} from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { startTestRuntime, type TestRuntime } from "./test-support/test-runtime.js";

const WAIT = 15_000;
const STATS_MS = 200;
const TALLY = served("tally");
const TALLY_PROCESS = { user: "tally-process", password: "tally-process-password" };

const TALLY_TOOLS = `
import { defineModule, defineTool, z, ToolError } from "@SDK@";
export default defineModule({
  tools: [
    defineTool({ name: "ok", description: "Answers.", input: z.object({ n: z.number() }),
      handler: async ({ n }) => ({ n }) }),
    defineTool({ name: "boom", description: "Throws.", input: z.object({}),
      handler: async () => { throw new Error("boom"); } }),
    defineTool({ name: "absent", description: "Refuses with NOT_FOUND.", input: z.object({}),
      handler: async () => { throw new ToolError("NOT_FOUND", "nothing here"); } }),
  ],
});
`;

/** Every tool's counts summed over the windows the stream holds for `node.module`. */
interface Totals {
  readonly windows: ToolStats[];
  readonly tools: Record<string, { calls: number; errors: number; codes: Record<string, number> }>;
}

async function totals(bus: MeshBus, node: string, module: string): Promise<Totals> {
  const windows: ToolStats[] = [];
  for await (const event of readStream(bus, Stream.toolStats, {
    filter: toolStatsSubject(node, module),
    schema: ToolStats,
  })) {
    if (event.type === "current") break;
    if (event.type === "message") windows.push(event.value);
    else assert.fail(event.problem.message);
  }
  const tools: Totals["tools"] = {};
  for (const window of windows) {
    for (const [tool, counts] of Object.entries(window.tools)) {
      const sum = (tools[tool] ??= { calls: 0, errors: 0, codes: {} });
      sum.calls += counts.calls;
      sum.errors += counts.errors;
      for (const [code, n] of Object.entries(counts.codes))
        sum.codes[code] = (sum.codes[code] ?? 0) + n;
    }
  }
  return { windows, tools };
}

/** Publishes on `subject` as `bus` and waits for the server to refuse it. */
async function refused(bus: MeshBus, subject: string): Promise<string | undefined> {
  const events = bus.events();
  const seen = (async () => {
    for await (const event of events as AsyncIterable<BusEvent>) {
      if (event.type === "error" && event.error.message.includes(subject)) return event.error.code;
    }
    return undefined;
  })();
  publish(bus, subject, { forged: true });
  await flush(bus);
  try {
    return await deadline(seen, WAIT, `the refusal of a publish to ${subject}`);
  } finally {
    await events.return(undefined);
  }
}

describe("the runtime's count of its tools' calls", () => {
  let bus: TestBus;
  let rt: TestRuntime;

  const call = (tool: string, input: unknown) =>
    request(bus.admin, toolSubject(NODE, "tally", tool), input, { timeoutMs: 10_000 });
  const refusal = async (tool: string, input: unknown): Promise<ReplyCode> => {
    try {
      await call(tool, input);
    } catch (error) {
      assert.ok(isMeshError(error), String(error));
      return error.code as ReplyCode;
    }
    return assert.fail(`${tool} answered`);
  };

  before(async () => {
    bus = await startTestBus({
      modules: [TALLY],
      users: [
        {
          ...TALLY_PROCESS,
          permissions: moduleGrant({ node: NODE, manifest: TALLY, owners: {} }).permissions,
        },
      ],
    });
    rt = await startTestRuntime(bus, {
      name: "mesh-tool-stats-",
      modules: { tally: { "tools.mjs": TALLY_TOOLS } },
      runtime: { toolStatsMs: STATS_MS },
    });
    await deadline(rt.statuses.inState("tally", ModuleState.serving), WAIT, "tally serving");
  });

  after(async () => {
    await rt?.stop();
    await bus?.stop();
  });

  test("reads back exactly the calls made and the errors by code, and files no quiet window", async () => {
    for (let n = 0; n < 7; n += 1) assert.deepEqual(await call("ok", { n }), { n });
    assert.equal(await refusal("ok", { n: "not a number" }), "INVALID_INPUT");
    assert.equal(await refusal("ok", { n: "again" }), "INVALID_INPUT");
    for (let i = 0; i < 3; i += 1) assert.equal(await refusal("boom", {}), "INTERNAL");
    assert.equal(await refusal("absent", {}), "NOT_FOUND");
    // Stopping files the last window: after it, the stream holds every call there will be.
    await rt.stop();
    const got = await totals(bus.admin, NODE, "tally");
    assert.deepEqual(got.tools, {
      ok: { calls: 9, errors: 2, codes: { INVALID_INPUT: 2 } },
      boom: { calls: 3, errors: 3, codes: { INTERNAL: 3 } },
      absent: { calls: 1, errors: 1, codes: { NOT_FOUND: 1 } },
    });
    // The runtime ran for many intervals; only windows in which something was called are filed.
    assert.ok(got.windows.length > 0);
    for (const window of got.windows) {
      assert.equal(window.node, NODE);
      assert.ok(
        Object.values(window.tools).some((c) => c.calls > 0),
        JSON.stringify(window),
      );
      assert.ok(window.from <= window.to, JSON.stringify(window));
    }
  });

  test("the runtime files its own node's served modules only, a module's credential nothing", async () => {
    const runtimeBus = await MeshBus.connect(bus.runtimeCredential);
    const processBus = await MeshBus.connect(
      credentialFor(bus.server, TALLY_PROCESS, { node: NODE, module: "tally" }),
    );
    try {
      for (const subject of [toolStatsSubject("n2", "tally"), toolStatsSubject(NODE, "other")]) {
        assert.equal(await refused(runtimeBus, subject), ErrorCode.PERMISSION_DENIED, subject);
      }
      assert.equal(
        await refused(processBus, toolStatsSubject(NODE, "tally")),
        ErrorCode.PERMISSION_DENIED,
      );
      // None of them reached the stream: a forged body there would not parse as counts, and
      // `totals` fails on any message that does not.
      assert.equal((await totals(bus.admin, "n2", "tally")).windows.length, 0);
      assert.equal((await totals(bus.admin, NODE, "other")).windows.length, 0);
      await totals(bus.admin, NODE, "tally");
    } finally {
      await processBus.close();
      await runtimeBus.close();
    }
  });
});
