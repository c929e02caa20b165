/**
 * The fleet as pages see it, computed on the server from core's read model: presence by the
 * mesh's one threshold, the summary's numbers, each cell's verdict, and a grid that stays
 * bounded — a 10,000-node fleet included.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { nodeState } from "@mesh/core";
import {
  PRESENCE_GONE_MS,
  type Assignment,
  type Have,
  type ModuleRegistration,
  type Presence,
  type Want,
} from "@mesh/protocol";
import { GRID_MAX_NODES } from "./browser/wire.js";
import { gridPage, gridQuery, indexFleet, type FleetInput } from "./fleet-view.js";

const NOW = Date.parse("2026-12-01T12:00:00.000Z");
const ago = (ms: number): string => new Date(NOW - ms).toISOString();

const presence = (node: string, heartbeat: string): Presence => ({
  node,
  facts: { hostname: `${node}.local`, os: "linux", arch: "x64", version: "0.1.0" },
  publicKey: "MCowBQYDK2VuAyEA0000000000000000000000000000000000000000000=",
  heartbeat,
});
const want = (build: string): Want => ({
  build,
  manifestDigest: "m".repeat(64),
  fingerprint: "f".repeat(16),
  rule: "newest",
  reason: "the newest build",
});
const have = (build: string, health: Have["health"]): Have => ({
  build,
  fingerprint: "f".repeat(16),
  health,
  since: ago(60_000),
  restarts: 0,
});

/** A fleet of `nodes` nodes, each wanting and running every module healthy, but `failing`. */
function fleet(nodes: number, modules: readonly string[], failing: readonly string[] = []) {
  const by = { by: "ada", at: ago(3_600_000) };
  const registration = (module: string): ModuleRegistration => ({
    module,
    source: { kind: "directory", path: `/src/${module}` },
    ...by,
  });
  const input = {
    now: NOW,
    registrations: new Map(modules.map((m) => [m, registration(m)])),
    presence: new Map<string, Presence>(),
    assignments: new Map<string, Assignment>(modules.map((m) => [`all.${m}`, by])),
    builds: new Map(),
    wants: new Map<string, Want>(),
    have: new Map<string, Have>(),
    differences: new Map(),
    compositions: new Map(),
    asks: new Map(),
    answers: new Map(),
    conditions: [],
    puts: new Map(),
  } satisfies FleetInput;
  for (let i = 0; i < nodes; i += 1) {
    const node = `n-${String(i).padStart(5, "0")}`;
    input.presence.set(node, presence(node, ago(1_000)));
    for (const module of modules) {
      const key = `${node}.${module}`;
      input.wants.set(key, want("1-a"));
      input.have.set(key, have("1-a", failing.includes(key) ? "failing" : "healthy"));
    }
  }
  return input;
}

describe("the fleet as pages see it: presence and queries", () => {
  it("judges presence by the mesh's one threshold (core's, which mesh status uses)", () => {
    const cases: Array<[string, Presence | undefined, string]> = [
      ["never seen", undefined, "never"],
      ["a heartbeat just now", presence("a", ago(0)), "present"],
      ["just under the threshold", presence("a", ago(PRESENCE_GONE_MS - 1)), "present"],
      ["at the threshold", presence("a", ago(PRESENCE_GONE_MS)), "gone"],
      ["an unreadable heartbeat", presence("a", "yesterday"), "gone"],
    ];
    for (const [name, value, expected] of cases) {
      assert.equal(nodeState(value, NOW), expected, name);
    }
  });

  it("bounds a grid query: count within 1..GRID_MAX_NODES, from and filter as given", () => {
    const cases: Array<[string, { from: number; count: number; filter: string }]> = [
      ["", { from: 0, count: 50, filter: "" }],
      ["from=20&count=10&filter=Rack", { from: 20, count: 10, filter: "rack" }],
      ["count=100000", { from: 0, count: GRID_MAX_NODES, filter: "" }],
      ["count=0&from=-4", { from: 0, count: 1, filter: "" }],
      ["count=abc", { from: 0, count: 50, filter: "" }],
    ];
    for (const [params, expected] of cases) {
      const query = gridQuery(new URLSearchParams(params));
      assert.deepEqual({ from: query.from, count: query.count, filter: query.filter }, expected);
    }
  });
});

describe("the fleet's grid as pages see it", () => {
  it("summarises a 10,000-node fleet and hands its grid a page at a time, each small", () => {
    const modules = ["board", "counter", "hello", "node-tools", "store"];
    const input = fleet(10_000, modules, ["n-04567.counter", "n-09999.store"]);
    const index = indexFleet(input, 1);
    assert.deepEqual(index.summary.nodes, { total: 10_000, present: 10_000, gone: 0, never: 0 });
    assert.deepEqual(index.summary.cells, { healthy: 49_998, starting: 0, notRunning: 2 });
    assert.deepEqual(index.summary.attention, { cells: 2, nodes: 0 });
    assert.ok(JSON.stringify(index.summary).length < 2_000, "the summary does not grow with nodes");

    const first = gridPage(input, index, gridQuery(new URLSearchParams("count=50")));
    assert.equal(first.columns.length, 50);
    assert.equal(first.rows.length, 5);
    assert.equal(Object.keys(first.cells).length, 250);
    assert.equal(first.cells["n-00000.counter"]?.verdict?.state, "healthy");
    assert.deepEqual(first.matched, { nodes: 10_000, modules: 5 });
    const largest = gridPage(input, index, gridQuery(new URLSearchParams("count=100000")));
    assert.equal(largest.columns.length, GRID_MAX_NODES);
    const bytes = JSON.stringify(largest).length;
    assert.ok(bytes < 1_000_000, `the largest page is ${bytes} bytes`);

    const last = gridPage(input, index, gridQuery(new URLSearchParams("from=9990&count=50")));
    assert.deepEqual(last.columns.at(-1)?.node, "n-09999");
    assert.equal(last.columns.length, 10);
  });

  it("narrows to what needs attention: cells the read model says do not run, their rows, gone nodes", () => {
    const input = fleet(300, ["counter", "store", "quiet"], ["n-00007.counter"]);
    input.presence.set("n-00100", presence("n-00100", ago(PRESENCE_GONE_MS + 1)));
    input.wants.delete("n-00100.quiet");
    input.have.delete("n-00100.quiet");
    const index = indexFleet(input, 1);
    assert.deepEqual(index.summary.nodes, { total: 300, present: 299, gone: 1, never: 0 });
    const page = gridPage(input, index, gridQuery(new URLSearchParams("attention=1")));
    assert.deepEqual(
      page.rows.map((r) => r.module),
      ["counter", "quiet", "store"],
    );
    // Every module on a gone node does not run, with the reason and the fix to give.
    const verdict = page.cells["n-00100.quiet"]?.verdict;
    assert.equal(verdict?.state, "not-running");
    assert.match(verdict?.reason ?? "", /n-00100 is gone/);
    assert.match(verdict?.fix ?? "", /mesh host --node n-00100/);
    assert.equal(page.cells["n-00007.counter"]?.have?.health, "failing");
    assert.deepEqual(
      page.columns.map((c) => [c.node, c.state]),
      [
        ["n-00007", "present"],
        ["n-00100", "gone"],
      ],
    );
    const named = gridPage(input, index, gridQuery(new URLSearchParams("filter=n-0001")));
    assert.equal(named.matched.nodes, 10, "n-00010 … n-00019");
    assert.equal(named.rows.length, 3, "a node's name keeps every module");
  });
});
