/**
 * Fuzzing tool inputs through a real runtime on a real bus: random bytes, random JSON, deep
 * nesting and values shaped almost like the tool's schema, sent to a tool as any caller could.
 * Every reply is the tool's answer or INVALID_INPUT — never INTERNAL, never silence — and the
 * module's worker never crashes or restarts: a good call still answers at the end.
 *
 * FUZZ_SEED=<n> replays a run; FUZZ_RUNS=<n> changes how many inputs are sent.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { request } from "@mesh/bus";
import { natsOf } from "@mesh/bus/internal";
import { deadline } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import { ReplyHeader, toolSubject } from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import { HOST_USER, startHostClient, type HostClient } from "./test-support/host-client.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { startTestRuntime, type TestRuntime } from "./test-support/test-runtime.js";

const SEED = Number(process.env["FUZZ_SEED"] ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 200);

const TOOLS = `
import { defineModule, defineTool, z } from "@SDK@";
export default defineModule({
  tools: [
    defineTool({
      name: "shape",
      description: "Takes a nested input and says what it got.",
      input: z.object({
        name: z.string().min(1).max(50),
        count: z.number().int().min(0).max(10).optional(),
        tags: z.array(z.enum(["a", "b", "c"])).max(5).optional(),
        inner: z.object({ on: z.boolean(), at: z.string().datetime().optional() }).optional(),
        pick: z.union([z.literal("x"), z.number()]).optional(),
      }).strict(),
      output: z.object({ ok: z.literal(true), name: z.string() }),
      handler: async ({ name }) => ({ ok: true, name }),
    }),
  ],
});
`;

/** Inputs near the schema: right fields with wrong values, extra fields, missing ones. */
const nearShape = fc.record(
  {
    name: fc.oneof(fc.string({ maxLength: 60 }), fc.integer(), fc.constant(null)),
    count: fc.oneof(fc.integer({ min: -5, max: 20 }), fc.double(), fc.string({ maxLength: 3 })),
    tags: fc.oneof(fc.array(fc.constantFrom("a", "b", "c", "d", 1), { maxLength: 7 }), fc.string()),
    inner: fc.oneof(
      fc.record({ on: fc.oneof(fc.boolean(), fc.string()), at: fc.string({ maxLength: 30 }) }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    pick: fc.oneof(fc.constant("x"), fc.constant("y"), fc.double(), fc.constant(null)),
    extra: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);

/** The bytes of a request body. */
const valid = fc.record(
  {
    name: fc.string({ minLength: 1, maxLength: 50 }),
    count: fc.integer({ min: 0, max: 10 }),
    tags: fc.array(fc.constantFrom("a", "b", "c"), { maxLength: 5 }),
    inner: fc.record({ on: fc.boolean() }),
    pick: fc.oneof(fc.constant("x"), fc.double({ noNaN: true, noDefaultInfinity: true })),
  },
  { requiredKeys: ["name"] },
);

const bodies: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 3, arbitrary: valid.map((v) => Buffer.from(JSON.stringify(v))) },
  { weight: 4, arbitrary: nearShape.map((v) => Buffer.from(JSON.stringify(v))) },
  {
    weight: 2,
    arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify(v))),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 100 }).map((s) => Buffer.from(s)) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 100, max: 20_000 })
      .map((depth) => Buffer.from(`${"[".repeat(depth)}${"]".repeat(depth)}`)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from(""),
      Buffer.from("null"),
      Buffer.from('{"name":"a","__proto__":{"polluted":true}}'),
      Buffer.from('{"name":"a","constructor":{"prototype":{"x":1}}}'),
      Buffer.from(`{"name":"${"x".repeat(100_000)}"}`),
      Buffer.from('{"name":"\\ud800"}'),
    ),
  },
);

describe("fuzzing tool inputs", () => {
  let bus: TestBus;
  let rt: TestRuntime;
  let provisioner: HostClient;

  before(async () => {
    bus = await startTestBus({
      modules: [served("fuzz")],
      users: [{ ...HOST_USER, permissions: hostGrant({ node: NODE }) }],
    });
    provisioner = await startHostClient({
      bus,
      node: NODE,
      modules: { fuzz: { config: {}, bound: {} } },
    });
    rt = await startTestRuntime(bus, {
      name: "mesh-tool-fuzz-",
      modules: { fuzz: { "tools.mjs": TOOLS } },
      runtime: {
        tuning: { heartbeatMs: 100, hangMs: 2_000, initialBackoffMs: 50, defaultTimeoutMs: 10_000 },
      },
    });
    await deadline(rt.statuses.inState("fuzz", ModuleState.serving), 30_000, "fuzz serving");
  });

  after(async () => {
    await rt?.stop();
    await provisioner?.stop();
    await bus?.stop();
  });

  test(`${RUNS} random inputs: an answer or INVALID_INPUT each, and the worker never restarts`, async () => {
    const subject = toolSubject(NODE, "fuzz", "shape");
    const samples = fc.sample(bodies, { numRuns: RUNS, seed: SEED });
    const codes = new Map<string, number>();
    const bad: string[] = [];
    for (const body of samples) {
      const reply = await natsOf(bus.admin).nc.request(subject, body, { timeout: 15_000 });
      const code = reply.headers?.get(ReplyHeader.code) ?? "";
      const outcome = code === "" ? "answer" : code;
      codes.set(outcome, (codes.get(outcome) ?? 0) + 1);
      if (outcome !== "answer" && outcome !== "INVALID_INPUT")
        bad.push(`${Buffer.from(body).toString("utf8").slice(0, 120)} → ${outcome}`);
      if (outcome === "answer") {
        const answer = reply.json<{ ok?: unknown }>();
        if (answer.ok !== true)
          bad.push(
            `${Buffer.from(body).toString("utf8").slice(0, 120)} → ${JSON.stringify(answer)}`,
          );
      }
    }
    console.log(
      `tool input fuzz: ${samples.length} inputs (seed ${SEED}); replies ${JSON.stringify([...codes].sort())}`,
    );
    assert.deepEqual(bad, [], `replay with FUZZ_SEED=${SEED}`);
    const status = rt.statuses.latest?.modules["fuzz"];
    assert.equal(status?.state, ModuleState.serving);
    assert.equal(status?.restarts, 0, "the worker restarted");
    assert.deepEqual(
      await request(bus.admin, subject, { name: "still here" }, { timeoutMs: 15_000 }),
      { ok: true, name: "still here" },
    );
  });
});
