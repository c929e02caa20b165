import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { PRESENCE_GONE_MS, Summary, type Build, type Have, type Health } from "@mesh/protocol";
import type { CellState } from "./reason.js";
import { assignedCells, readFleet, type FleetView } from "./read-model.js";
import { CRASH_LOOP_EXITS, cellReason } from "./reason.js";
import { emptyFleetState, nodeState, type FleetState } from "./state.js";
import { summarizeFleet } from "./summary.js";

const NODES = ["n1", "n2", "n3"];
const MODULES = ["alpha", "beta"];
const BUILDS = ["1-aaaaaaaa", "2-bbbbbbbb"];
const NOW = Date.parse("2026-01-01T01:00:00.000Z");
const at = (ms: number) => new Date(ms).toISOString();

const cell = fc.record({
  node: fc.constantFrom(...NODES),
  module: fc.constantFrom(...MODULES),
  build: fc.constantFrom(...BUILDS),
});

/** A fleet drawn at random, each bucket independently: the read model must hold for any of them. */
const fleet = fc.record({
  presence: fc.array(
    fc.record({
      node: fc.constantFrom(...NODES),
      age: fc.integer({ min: 0, max: 3 * PRESENCE_GONE_MS }),
    }),
  ),
  assignments: fc.subarray([...NODES, "all", "n9"].flatMap((t) => MODULES.map((m) => `${t}.${m}`))),
  registered: fc.subarray(MODULES),
  builds: fc.array(
    fc.record({
      module: fc.constantFrom(...MODULES),
      build: fc.constantFrom(...BUILDS),
      status: fc.constantFrom<Build["status"]>("built", "building", "failed"),
    }),
  ),
  wants: fc.array(cell),
  have: fc.array(
    fc.record({
      c: cell,
      health: fc.constantFrom<Health>("starting", "healthy", "failing", "stopped"),
      error: fc.option(fc.constant("exited with 1"), { nil: undefined }),
      exits: fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined }),
    }),
  ),
  differences: fc.array(cell),
  refused: fc.subarray(NODES),
  asks: fc.array(cell, { maxLength: 2 }),
  conditions: fc.array(
    fc.record({ c: cell, level: fc.constantFrom("info", "warning", "error" as const) }),
    { maxLength: 3 },
  ),
});

type Drawn = typeof fleet extends fc.Arbitrary<infer T> ? T : never;

/** A drawn `have` as its host writes it, under its key. */
function haveEntry({ c, health, error, exits }: Drawn["have"][number]): [string, Have] {
  return [
    `${c.node}.${c.module}`,
    {
      build: c.build,
      fingerprint: "f",
      health,
      since: at(NOW),
      restarts: 1,
      ...(error === undefined ? {} : { lastError: error }),
      ...(exits === undefined || health === "healthy"
        ? {}
        : { exits: { inARow: exits, last: at(NOW - 500) } }),
    },
  ];
}

function materialise(d: Drawn): FleetState {
  const s = emptyFleetState(NOW) as unknown as { -readonly [K in keyof FleetState]: FleetState[K] };
  const m = <T>(entries: Array<[string, T]>) => new Map(entries);
  s.presence = m(
    d.presence.map(({ node, age }) => [
      node,
      {
        node,
        facts: { hostname: node, os: "linux", arch: "x64", version: "0" },
        publicKey: "k",
        heartbeat: at(NOW - age),
      },
    ]),
  );
  s.assignments = m(d.assignments.map((k) => [k, { by: "ada", at: at(NOW) }]));
  s.registrations = m(
    d.registered.map((module) => [
      module,
      { module, source: { kind: "folder", path: "/m" }, by: "ada", at: at(NOW) } as never,
    ]),
  );
  s.builds = m(
    d.builds.map(({ module, build, status }) => [
      `${module}.${build}`,
      { module, build, status, candidate: 1, bundles: [], log: "", timings: { started: at(NOW) } },
    ]),
  );
  s.wants = m(
    d.wants.map(({ node, module, build }) => [
      `${node}.${module}`,
      { build, manifestDigest: "a".repeat(64), fingerprint: "f", rule: "newest", reason: "newest" },
    ]),
  );
  s.have = m(d.have.map(haveEntry));
  s.differences = m(
    d.differences.map((c) => [`${c.node}.${c.module}`, { reasons: [`differs on ${c.node}`] }]),
  );
  s.compositions = m(
    d.refused.map((node) => [
      node,
      { node, verdict: "refused" as const, wanted: {}, reasons: ["two runtimes"] },
    ]),
  );
  s.asks = m(
    d.asks.map((c, i) => [
      `w-${i}`,
      {
        id: `w-${i}`,
        what: `${c.module} widens`,
        module: c.module,
        build: c.build,
        nodes: [c.node],
        at: at(NOW),
      },
    ]),
  );
  s.conditions = d.conditions.map(({ c, level }) => ({
    module: c.module,
    name: "said",
    level,
    message: `${c.module} said something on ${c.node}`,
    node: c.node,
    at: at(NOW),
  }));
  return s;
}

/** Over `numRuns` generated fleets, checks each cell of the read model against its state. */
function everyCell(
  numRuns: number,
  check: (s: FleetState, c: FleetView["cells"][number], key: string) => void,
): void {
  fc.assert(
    fc.property(fleet, (d) => {
      const s = materialise(d);
      for (const c of readFleet(s).cells) check(s, c, `${c.node}.${c.module}`);
    }),
    { numRuns },
  );
}

describe("the fleet's read model: properties over generated fleets", () => {
  it("every assigned cell gets exactly one state and a reason; every state but healthy has a fix", () => {
    fc.assert(
      fc.property(fleet, (d) => {
        const s = materialise(d);
        const view = readFleet(s);
        const expected = assignedCells(s).map((c) => `${c.node}.${c.module}`);
        assert.deepEqual(
          view.cells.map((c) => `${c.node}.${c.module}`),
          expected,
          "one entry per assigned cell, none twice",
        );
        for (const c of view.cells) {
          assert.ok(["healthy", "starting", "not-running"].includes(c.state));
          assert.ok(c.reason.length > 0, `${c.node}.${c.module} has a reason`);
          if (c.state !== "healthy") {
            assert.match(
              c.fix ?? "",
              /`mesh [a-z]/,
              `${c.node}.${c.module} (${c.state}) names a command`,
            );
          }
        }
        assert.deepEqual(
          view.attention.cells,
          view.cells.filter((c) => c.state === "not-running"),
        );
      }),
      { numRuns: 500 },
    );
  });

  it("healthy only when the node is present and reports the wanted build healthy", () => {
    everyCell(500, (s, c, key) => {
      const healthy =
        nodeState(s.presence.get(c.node), s.now) === "present" &&
        s.wants.get(key) !== undefined &&
        s.have.get(key)?.build === s.wants.get(key)?.build &&
        s.have.get(key)?.health === "healthy";
      assert.equal(c.state === "healthy", healthy, `${key}: ${c.state} — ${c.reason}`);
    });
  });

  it("a gone or never seen node's cells are not running, and say so", () => {
    everyCell(300, (s, c) => {
      const where = nodeState(s.presence.get(c.node), s.now);
      if (where === "present") return;
      assert.equal(c.state, "not-running");
      assert.match(c.reason, where === "gone" ? /is gone/ : /never been present/);
    });
  });

  it("a wanted build that exits in a row is never starting: it crash-loops, with the fixes (issue 14)", () => {
    everyCell(500, (s, c, key) => {
      const have = s.have.get(key);
      const exits = have?.exits?.inARow ?? 0;
      if (
        nodeState(s.presence.get(c.node), s.now) !== "present" ||
        have?.build !== s.wants.get(key)?.build ||
        (have?.health !== "starting" && have?.health !== "failing") ||
        exits < CRASH_LOOP_EXITS
      )
        return;
      assert.equal(c.state, "not-running", `${key}: ${c.reason}`);
      assert.match(c.reason, new RegExp(`crash-loops on ${c.node}: ${exits} exits in a row`));
      assert.match(c.fix ?? "", new RegExp(`mesh logs ${c.module} --node ${c.node}`));
      assert.match(c.fix ?? "", /mesh put /);
      assert.ok(
        readFleet(s).attention.cells.some((a) => a.node === c.node && a.module === c.module),
      );
    });
  });

  it("is a function of the state: the same state gives the same view", () => {
    fc.assert(
      fc.property(fleet, (d) => {
        assert.deepEqual(readFleet(materialise(d)), readFleet(materialise(d)));
      }),
      { numRuns: 100 },
    );
  });
});

describe("the fleet's read model: each reason", () => {
  const base = (): FleetState => {
    const s = materialise({
      presence: [{ node: "n1", age: 1000 }],
      assignments: ["n1.alpha"],
      registered: ["alpha"],
      builds: [{ module: "alpha", build: "1-aaaaaaaa", status: "built" }],
      wants: [{ node: "n1", module: "alpha", build: "1-aaaaaaaa" }],
      have: [],
      differences: [],
      refused: [],
      asks: [],
      conditions: [],
    });
    return s;
  };
  const haveIt = (s: FleetState, health: Health, build = "1-aaaaaaaa") =>
    (s.have as Map<string, Have>).set("n1.alpha", {
      build,
      fingerprint: "f",
      health,
      since: at(NOW),
      restarts: 2,
      lastError: "boom",
    });

  it("healthy, starting, failing (with retry), applying another build", () => {
    let s = base();
    haveIt(s, "healthy");
    assert.equal(cellReason(s, "n1", "alpha").state, "healthy");
    haveIt(s, "starting");
    assert.equal(cellReason(s, "n1", "alpha").state, "starting");
    haveIt(s, "failing");
    const failing = cellReason(s, "n1", "alpha");
    assert.equal(failing.state, "not-running");
    assert.match(failing.reason, /fails on n1: boom/);
    assert.match(failing.fix ?? "", /mesh retry alpha --node n1/);
    s = base();
    haveIt(s, "healthy", "0-old");
    assert.match(cellReason(s, "n1", "alpha").reason, /still runs 0-old/);
  });

  // Issue 14: between the restarts of a daemon that exits at once, the have says `starting`.
  const loopTable: Array<[string, Health, number | undefined, CellState, RegExp, RegExp]> = [
    ["started, never exited", "starting", undefined, "starting", /is starting$/, /mesh logs/],
    [
      "exited once, restarted",
      "starting",
      1,
      "starting",
      /starting again: it exited at .*: boom/,
      /mesh logs alpha --node n1/,
    ],
    [
      "two exits in a row, between restarts",
      "starting",
      2,
      "not-running",
      /crash-loops on n1: 2 exits in a row, the last at .*: boom; .*2 restarts in all/,
      /mesh logs alpha --node n1.*mesh put alpha 0-older --node n1.*mesh retry alpha --node n1/,
    ],
    [
      "seven exits, the backoff past the window",
      "starting",
      7,
      "not-running",
      /crash-loops on n1: 7 exits in a row/,
      /mesh put alpha 0-older --node n1/,
    ],
    [
      "failing, exiting in a row",
      "failing",
      3,
      "not-running",
      /crash-loops on n1: 3 exits in a row/,
      /mesh retry alpha --node n1/,
    ],
  ];
  for (const [what, health, inARow, state, reason, fix] of loopTable) {
    it(`a crash loop: ${what} → ${state}`, () => {
      const s = base();
      (s.builds as Map<string, Build>).set("alpha.0-older", {
        ...(s.builds.get("alpha.1-aaaaaaaa") as Build),
        build: "0-older",
      });
      (s.builds as Map<string, Build>).set("alpha.1-aaaaaaaa", {
        ...(s.builds.get("alpha.1-aaaaaaaa") as Build),
        candidate: 2,
      });
      (s.have as Map<string, Have>).set("n1.alpha", {
        build: "1-aaaaaaaa",
        fingerprint: "f",
        health,
        since: at(NOW),
        restarts: 2,
        ...(inARow === undefined
          ? {}
          : { lastError: "boom", exits: { inARow, last: at(NOW - 1000) } }),
      });
      const c = cellReason(s, "n1", "alpha");
      assert.equal(c.state, state, c.reason);
      assert.match(c.reason, reason);
      assert.match(c.fix ?? "", fix);
      assert.equal(
        readFleet(s).attention.cells.some((a) => a.module === "alpha"),
        state === "not-running",
      );
    });
  }

  it("a crash loop with no older build names `mesh builds` to find one", () => {
    const s = base();
    haveIt(s, "starting");
    (s.have as Map<string, Have>).set("n1.alpha", {
      ...(s.have.get("n1.alpha") as Have),
      exits: { inARow: 4, last: at(NOW) },
    });
    assert.match(
      cellReason(s, "n1", "alpha").fix ?? "",
      /mesh builds alpha.*mesh put alpha <build> --node n1/,
    );
  });

  it("a node gone by the one threshold, and just within it", () => {
    const s = base() as unknown as { presence: Map<string, unknown> };
    const p = s.presence.get("n1") as { heartbeat: string };
    p.heartbeat = at(NOW - PRESENCE_GONE_MS);
    assert.match(cellReason(s as unknown as FleetState, "n1", "alpha").reason, /n1 is gone/);
    p.heartbeat = at(NOW - PRESENCE_GONE_MS + 1);
    assert.notEqual(cellReason(s as unknown as FleetState, "n1", "alpha").state, "not-running");
  });

  it("nothing wanted: an open ask, every build failed, not registered", () => {
    const s = base();
    (s.wants as Map<string, unknown>).clear();
    (s.asks as Map<string, unknown>).set("w-1", {
      id: "w-1",
      what: "alpha widens",
      module: "alpha",
      build: "2-b",
      nodes: ["n1"],
      at: at(NOW),
    });
    assert.match(cellReason(s, "n1", "alpha").fix ?? "", /mesh answer w-1 yes/);
    (s.asks as Map<string, unknown>).clear();
    (s.builds as Map<string, Build>).set("alpha.1-aaaaaaaa", {
      ...(s.builds.get("alpha.1-aaaaaaaa") as Build),
      status: "failed",
    });
    assert.match(cellReason(s, "n1", "alpha").reason, /every build of alpha failed/);
    (s.builds as Map<string, unknown>).clear();
    (s.registrations as Map<string, unknown>).clear();
    assert.match(cellReason(s, "n1", "alpha").fix ?? "", /mesh module add/);
  });
});

describe("the fleet's summary and pages read by key", () => {
  it("the summary counts what the read model says, and carries the first of each list", () => {
    fc.assert(
      fc.property(fleet, fc.integer({ min: 0, max: 4 }), (d, first) => {
        const s = materialise(d);
        const view = readFleet(s);
        const summary = Summary.parse(summarizeFleet(s, { first }));
        assert.equal(summary.nodes.total, view.nodes.length);
        assert.equal(summary.cells.assigned, view.cells.length);
        assert.equal(
          summary.cells.healthy + summary.cells.starting + summary.cells.notRunning,
          view.cells.length,
        );
        assert.equal(summary.cells.leaving, view.leaving.length);
        assert.equal(
          summary.modules.reduce((n, m) => n + m.assigned, 0),
          view.cells.length,
        );
        assert.equal(summary.attention.cells, view.attention.cells.length);
        assert.deepEqual(summary.attention.first, view.attention.cells.slice(0, first));
        assert.equal(summary.differences.total, s.differences.size);
        assert.ok(summary.differences.first.length <= first);
        assert.equal(summary.at, at(NOW));
      }),
      { numRuns: 300 },
    );
  });

  it("a cell's reason read from its node's keys alone is the one read from every key", () => {
    fc.assert(
      fc.property(fleet, fc.subarray(NODES), (d, nodes) => {
        const whole = materialise(d);
        const page = onlyNodes(whole, new Set(nodes));
        for (const node of nodes) {
          for (const module of MODULES) {
            assert.deepEqual(cellReason(page, node, module), cellReason(whole, node, module));
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** The state a reader by key holds: the keys of some nodes, and the module-wide buckets whole. */
function onlyNodes(s: FleetState, nodes: ReadonlySet<string>): FleetState {
  const keep = <T>(map: ReadonlyMap<string, T>) =>
    new Map([...map].filter(([key]) => nodes.has(key.split(".")[0] ?? "")));
  return {
    ...s,
    presence: keep(s.presence),
    wants: keep(s.wants),
    have: keep(s.have),
    differences: keep(s.differences),
    compositions: keep(s.compositions),
  };
}
