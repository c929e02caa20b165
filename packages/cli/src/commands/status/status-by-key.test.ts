/**
 * `mesh status` from the assigner's summary and a page read by key (decision 0090) says what the
 * read of every bucket says: the same nodes, cells, states, reasons, totals and attention for
 * every page and narrowing, on a fleet with every kind of cell (healthy, failing, gone, never
 * seen, leaving, differing, waiting for an answer). Without a summary it reads every bucket, and
 * says so. A real bus with the operator's grant.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MeshBus } from "@mesh/bus";
import { summarizeFleet } from "@mesh/core";
import { Bucket, PRESENCE_GONE_MS, Principal, SUMMARY_KEY } from "@mesh/protocol";
import { healthyHave, presenceOf } from "../../testing/fixtures.js";
import { startOperatorBus, type OperatorBus } from "../../testing/operator-bus.js";
import { readFleetState, readStatus, statusOf, type StatusReport } from "./status.js";
import type { StatusQuery } from "./status-page.js";

/** Two modules everywhere: more cells than status reads whole (STATUS_WHOLE_UP_TO). */
const NODES = 520;
const BUILD = "1-aaaaaaaa";

describe("mesh status from the summary and pages read by key", () => {
  let bus: OperatorBus;
  let operator: MeshBus;
  const now = new Date();

  before(async () => {
    bus = await startOperatorBus({ name: "status-by-key" });
    operator = await MeshBus.connect(bus.loginOf(Principal.operator));
    const at = now.toISOString();
    const gone = new Date(now.getTime() - 2 * PRESENCE_GONE_MS).toISOString();
    const by = { by: "ada", at };
    for (const module of ["alpha", "beta", "gamma"]) {
      await bus.put(Bucket.modules, module, {
        module,
        source: { kind: "directory", path: "/src" },
        ...by,
      });
    }
    await bus.put(Bucket.builds, `alpha.${BUILD}`, {
      module: "alpha",
      build: BUILD,
      status: "built",
      candidate: 1,
      manifestDigest: "d".repeat(64),
      bundles: [],
      log: "",
      timings: { started: at },
    });
    await bus.put(Bucket.assignments, "all.alpha", by);
    await bus.put(Bucket.assignments, "all.beta", by);
    await bus.put(Bucket.assignments, "n0005.gamma", by);
    await bus.put(Bucket.assignments, "ghost.alpha", by); // a node never seen
    const seedNode = async (i: number): Promise<void> => {
      const node = `n${String(i).padStart(4, "0")}`;
      await bus.put(Bucket.presence, node, presenceOf(node, i % 53 === 0 ? gone : at));
      const want = {
        build: BUILD,
        manifestDigest: "d".repeat(64),
        fingerprint: "f",
        rule: "newest",
        reason: "newest",
      };
      await bus.put(Bucket.wants, `${node}.alpha`, want);
      await bus.put(
        Bucket.have,
        `${node}.alpha`,
        i % 29 === 0
          ? { ...healthyHave(BUILD, at), health: "failing", lastError: "exit 1" }
          : healthyHave(BUILD, at),
      );
      if (i % 11 === 0) {
        await bus.put(Bucket.differences, `${node}.alpha`, {
          want: BUILD,
          reasons: [`${node} reports another build`],
        });
      }
    };
    for (let i = 0; i < NODES; i += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, NODES - i) }, (_, j) => seedNode(i + j)),
      );
    }
    // Wanted where nothing assigns it any more: leaving.
    await bus.put(Bucket.wants, "n0003.delta", {
      build: "2-bbbbbbbb",
      manifestDigest: "e".repeat(64),
      fingerprint: "f",
      rule: "newest",
      reason: "newest",
    });
    await bus.put(Bucket.asks, "w-1", {
      id: "w-1",
      what: "beta widens",
      module: "beta",
      build: "3-cccccccc",
      nodes: ["n0001"],
      at,
    });
  });

  after(async () => {
    await operator?.close();
    await bus?.[Symbol.asyncDispose]();
  });

  /** Status as it was read before the summary: every bucket whole. */
  async function everyBucket(query: StatusQuery): Promise<StatusReport> {
    const { state, conditions } = await readFleetState(operator, { now });
    return statusOf(state, conditions, now, query);
  }

  const comparable = (r: StatusReport) => {
    const { at: _at, source: _source, ...rest } = r;
    return rest;
  };

  test("without a summary it reads every bucket, and says so", async () => {
    const report = await readStatus(operator, { now, query: { from: 0, limit: 20 }, wholeUpTo: 0 });
    assert.equal(report.source.kind, "every-bucket");
    const text = await bus.text(["status"]);
    assert.match(text, /read from every bucket: the assigner has written no summary/);
  });

  test("every page and narrowing says what the read of every bucket says", async () => {
    const { state } = await readFleetState(operator, { now });
    await bus.put(Bucket.summary, SUMMARY_KEY, summarizeFleet(state));
    const queries: StatusQuery[] = [
      { from: 0, limit: 50 },
      { from: 40, limit: 30 },
      { from: 510, limit: 500 },
      { from: 0, limit: 500 },
      { from: 0, limit: 50, node: "n0005" },
      { from: 0, limit: 50, node: "n0003" },
      { from: 0, limit: 50, node: "ghost" },
      { from: 0, limit: 20, module: "beta" },
      { from: 10, limit: 20, module: "gamma" },
      { from: 0, limit: 50, module: "nosuch" },
    ];
    const first = await readStatus(operator, { now, query: { from: 0, limit: 50 }, wholeUpTo: 0 });
    assert.equal(first.modules.length, 50);
    assert.ok(first.attention.length > 0 && first.differences.length > 0 && first.asks.length > 0);
    assert.ok(first.modules.some((c) => c.state === "healthy"));
    for (const query of queries) {
      const byKey = await readStatus(operator, { now, query, wholeUpTo: 0 });
      assert.deepEqual(byKey.source, { kind: "summary", at: now.toISOString() });
      assert.deepEqual(
        comparable(byKey),
        comparable(await everyBucket(query)),
        JSON.stringify(query),
      );
    }
  });

  test("a summary that carries only the first differences: each page cell's is read by key", async () => {
    const { state } = await readFleetState(operator, { now });
    await bus.put(Bucket.summary, SUMMARY_KEY, summarizeFleet(state, { first: 2 }));
    for (const query of [
      { from: 0, limit: 500 },
      { from: 0, limit: 2 },
      { from: 1, limit: 7 },
      { from: 30, limit: 500 },
      { from: 3, limit: 10, module: "alpha" },
      { from: 0, limit: 50, node: "n0022" },
    ]) {
      const byKey = await readStatus(operator, { now, query, wholeUpTo: 0 });
      const whole = await everyBucket(query);
      assert.deepEqual(byKey.modules, whole.modules, JSON.stringify(query));
      assert.ok(byKey.modules.some((c) => c.differs));
      assert.deepEqual(byKey.differences, whole.differences, JSON.stringify(query));
      assert.equal(byKey.page.totals.differences, whole.page.totals.differences);
      assert.deepEqual(byKey.nodes, whole.nodes);
      assert.equal(byKey.page.totals.attention, whole.page.totals.attention);
    }
    await bus.put(Bucket.summary, SUMMARY_KEY, summarizeFleet(state));
  });

  test("up to STATUS_WHOLE_UP_TO cells it reads every bucket, exact to the moment, and says so", async () => {
    const query = { from: 0, limit: 20 };
    const big = await readStatus(operator, { now, query });
    assert.equal(big.source.kind, "summary", "1,043 cells are more than 1,000");
    const small = await readStatus(operator, { now, query, wholeUpTo: 5_000 });
    assert.equal(small.source.kind, "every-bucket");
    assert.match(
      small.source.kind === "every-bucket" ? small.source.why : "",
      /a fleet of 1043 cells, read whole/,
    );
  });

  test("the text says the assigner counted it", async () => {
    const text = await bus.text(["status"]);
    assert.match(
      text,
      /counted by the assigner at \S+ \(\d+[smhd] ago\).*the rows below are read now/,
    );
    assert.match(text, /nodes: 521 \(\d+ present, \d+ gone, 1 never seen\)/);
  });

  test("mesh wants and mesh differences: their pages, read by key, join up to the whole read", async () => {
    const { state, conditions } = await readFleetState(operator, { now });
    // Only the first differences in the summary: later pages are read by key.
    await bus.put(Bucket.summary, SUMMARY_KEY, summarizeFleet(state, { first: 2 }));
    const whole = statusOf(state, conditions, now);
    type Wants = { cells: Array<{ node: string; module: string; state: string }> };
    const cells: Wants["cells"] = [];
    const wants: Record<string, unknown> = {};
    for (let from = 0; from < whole.page.totals.modules; from += 400) {
      const page = await bus.json<Wants & { wants: Record<string, unknown> }>(
        ["wants", "--from", String(from), "--limit", "400"],
        { deadlineMs: 60_000 },
      );
      cells.push(...page.cells);
      Object.assign(wants, page.wants);
    }
    const wholeCells = whole.modules.filter((c) => c.want !== null || c.state !== "leaving");
    assert.deepEqual(cells, JSON.parse(JSON.stringify(wholeCells)));
    assert.deepEqual(wants, Object.fromEntries([...state.wants].sort(([a], [b]) => cmp(a, b))));
    const differences: Record<string, unknown> = {};
    for (let from = 0; from < state.differences.size; from += 20) {
      const page = await bus.json<{ differences: Record<string, unknown> }>(
        ["differences", "--from", String(from), "--limit", "20"],
        { deadlineMs: 60_000 },
      );
      assert.ok(Object.keys(page.differences).length > 0, `a page from ${from}`);
      Object.assign(differences, page.differences);
    }
    assert.deepEqual(differences, Object.fromEntries(state.differences));
    const text = await bus.text(["differences", "--limit", "5"]);
    assert.match(text, /… \d+ more of \d+: `mesh differences --from 5`/);
    await bus.put(Bucket.summary, SUMMARY_KEY, summarizeFleet(state));
  });
});

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
