/**
 * `mesh status` on a fleet larger than a screen: a summary, pages of each list with a line saying
 * how many more there are, narrowing to a node or a module, and a JSON document whose lists are
 * bounded however many nodes there are. The built CLI with the operator's grant on a real bus.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Bucket } from "@mesh/protocol";
import { healthyHave, presenceOf } from "../../testing/fixtures.js";
import { operatorBusSuite } from "../../testing/operator-bus.js";
import { type MeshRun } from "../../testing/run-mesh.js";
import { table } from "../../verb.js";

const NODES = 1_200;
const READ_MS = 120_000;

describe("mesh status on 1,200 nodes", () => {
  const bus = operatorBusSuite({ name: "status-scale" }, { before, after });

  before(async () => {
    const at = new Date().toISOString();
    await bus.put(Bucket.assignments, "all.hello", { by: "ada", at });
    for (let i = 0; i < NODES; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, NODES - i) }, async (_, j) => {
          const node = `n${String(i + j).padStart(4, "0")}`;
          await bus.put(Bucket.presence, node, presenceOf(node, at));
          await bus.put(Bucket.have, `${node}.hello`, healthyHave("1-a", at));
        }),
      );
    }
  });

  const read = (...args: string[]): Promise<MeshRun> => bus.run(args, { deadlineMs: READ_MS });

  test("the text is a summary and a page of each list, with how to see the rest", async () => {
    const run = await read("status");
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /nodes: 1200 \(1200 present, 0 gone, 0 never seen\)/);
    assert.match(run.stdout, /assigned: 1200 /);
    assert.match(run.stdout, /^ {2}hello +1200 /m);
    assert.match(run.stdout, /… 1150 more of 1200: `mesh status --from 50`/);
    assert.ok(run.stdout.split("\n").length < 250, `${run.stdout.split("\n").length} lines`);
  });

  test("--json is bounded: pages of the lists with their totals, and the summary", async () => {
    const run = await read("status", "--json");
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as {
      nodes: unknown[];
      modules: unknown[];
      summary: { nodes: { total: number }; cells: { assigned: number } };
      page: { totals: { nodes: number; modules: number; attention: number } };
    };
    assert.equal(report.nodes.length, 500);
    assert.equal(report.modules.length, 500);
    assert.deepEqual(report.page.totals, {
      nodes: NODES,
      modules: NODES,
      differences: 0,
      attention: report.page.totals.attention,
    });
    assert.equal(report.summary.nodes.total, NODES);
    assert.equal(report.summary.cells.assigned, NODES);
    const next = JSON.parse(
      (await read("status", "--json", "--from", "1100", "--limit", "500")).stdout,
    ) as { nodes: Array<{ node: string }> };
    assert.equal(next.nodes.length, 100);
    assert.equal(next.nodes[0]?.node, "n1100");
  });

  test("--node and --module narrow the lists", async () => {
    const one = JSON.parse((await read("status", "--json", "--node", "n0007")).stdout) as {
      nodes: Array<{ node: string }>;
      modules: Array<{ node: string; module: string }>;
    };
    assert.deepEqual(
      one.nodes.map((n) => n.node),
      ["n0007"],
    );
    assert.deepEqual(
      one.modules.map((c) => `${c.node}.${c.module}`),
      ["n0007.hello"],
    );
    const none = JSON.parse((await read("status", "--json", "--module", "nosuch")).stdout) as {
      modules: unknown[];
    };
    assert.deepEqual(none.modules, []);
  });
});

describe("status tables", () => {
  test("200,000 rows (10,000 nodes × 20 modules) do not overflow the call stack", () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => [`m${i % 20}`, `n${i}`, "healthy"]);
    const lines = table(["module", "node", "health"], rows);
    assert.equal(lines.length, 200_001);
    assert.match(lines[1] ?? "", /^ {2}m0 +n0 +healthy$/);
  });
});
