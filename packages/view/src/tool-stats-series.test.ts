/**
 * A module's tool calls for the page: windows summed into steps (table), and read from a real
 * `mesh-tool-stats` with the operator's grant, newest first, bounded, one module and node apart.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { toolStatsSubject, type ToolStats } from "@mesh/protocol";
import { flush, publish } from "@mesh/bus";
import { readToolStats, seriesOf } from "./tool-stats-series.js";
import { startTestMesh, type TestMesh } from "./test-support.js";

const T0 = Date.parse("2026-12-03T12:00:00.000Z");
const iso = (ms: number): string => new Date(ms).toISOString();
const window = (
  node: string,
  module: string,
  endMs: number,
  tools: ToolStats["tools"],
): ToolStats => ({ v: 1, node, module, from: iso(endMs - 5_000), to: iso(endMs), tools });

describe("seriesOf", () => {
  const range = { from: T0, to: T0 + 60_000, steps: 6 };
  const cases: Array<{
    name: string;
    windows: ToolStats[];
    want: Record<string, { calls: number[]; errors: number[]; codes: Record<string, number> }>;
  }> = [
    { name: "nothing called", windows: [], want: {} },
    {
      name: "a window counts in the step its end falls in; two nodes sum",
      windows: [
        window("n1", "m", T0 + 10_000, { a: { calls: 4, errors: 1, codes: { INTERNAL: 1 } } }),
        window("n2", "m", T0 + 10_000, { a: { calls: 2, errors: 0, codes: {} } }),
        window("n1", "m", T0 + 55_000, {
          a: { calls: 1, errors: 1, codes: { TIMEOUT: 1 } },
          b: { calls: 3, errors: 0, codes: {} },
        }),
      ],
      want: {
        a: {
          calls: [6, 0, 0, 0, 0, 1],
          errors: [1, 0, 0, 0, 0, 1],
          codes: { INTERNAL: 1, TIMEOUT: 1 },
        },
        b: { calls: [0, 0, 0, 0, 0, 3], errors: [0, 0, 0, 0, 0, 0], codes: {} },
      },
    },
    {
      name: "a window that ended before the range is left out",
      windows: [window("n1", "m", T0, { a: { calls: 9, errors: 0, codes: {} } })],
      want: {},
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const got = seriesOf(c.windows, range);
      assert.equal(got.stepMs, 10_000);
      const byTool = Object.fromEntries(
        got.tools.map((t) => [t.tool, { calls: t.calls, errors: t.errors, codes: t.codes }]),
      );
      assert.deepEqual(byTool, c.want);
      for (const t of got.tools) {
        assert.equal(
          t.totalCalls,
          t.calls.reduce((a, b) => a + b, 0),
        );
        assert.equal(
          t.totalErrors,
          t.errors.reduce((a, b) => a + b, 0),
        );
      }
    });
  }
});

describe("readToolStats on a real bus", () => {
  let mesh: TestMesh;
  const now = Date.now();
  before(async () => {
    mesh = await startTestMesh();
    // An hour ago (outside the time asked), and the last minutes on two nodes; another module.
    const publishes: Array<[string, string, ToolStats]> = [
      ["n1", "counter", window("n1", "counter", now - 3_600_000, { inc: c(50, 0) })],
      ["n1", "counter", window("n1", "counter", now - 120_000, { inc: c(5, 1) })],
      ["n2", "counter", window("n2", "counter", now - 60_000, { inc: c(7, 0) })],
      ["n1", "hello", window("n1", "hello", now - 60_000, { greet: c(11, 0) })],
    ];
    for (const [node, module, body] of publishes) {
      publish(mesh.admin, toolStatsSubject(node, module), body);
    }
    await flush(mesh.admin);
  });
  after(async () => {
    await mesh?.stop();
  });

  const c = (calls: number, errors: number) => ({
    calls,
    errors,
    codes: errors === 0 ? {} : { INTERNAL: errors },
  });
  const signal = new AbortController().signal;

  test("every node's windows in the time asked, summed, with the operator's grant", async () => {
    const got = await readToolStats(mesh.operator, { module: "counter", minutes: 30, now }, signal);
    assert.deepEqual(
      got.tools.map((t) => [t.tool, t.totalCalls, t.totalErrors]),
      [["inc", 12, 1]],
    );
    assert.equal(got.windows, 2);
    assert.equal(got.truncated, false);
  });

  test("one node's, and an hour back", async () => {
    const one = await readToolStats(
      mesh.operator,
      { module: "counter", node: "n2", minutes: 30, now },
      signal,
    );
    assert.deepEqual(
      one.tools.map((t) => [t.tool, t.totalCalls]),
      [["inc", 7]],
    );
    const hour = await readToolStats(
      mesh.operator,
      { module: "counter", minutes: 90, now },
      signal,
    );
    assert.deepEqual(
      hour.tools.map((t) => [t.tool, t.totalCalls]),
      [["inc", 62]],
    );
  });
});
