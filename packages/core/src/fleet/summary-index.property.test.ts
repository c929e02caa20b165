/**
 * The incremental summary is the whole one (issue 23.4): for any sequence of changes to any
 * map of the fleet's state — and the clock moving on, or back — `SummaryIndex.update` with the
 * keys each batch moved returns exactly `summarizeFleet` of the state as it then stands.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { PRESENCE_GONE_MS, type Build, type Health } from "@mesh/protocol";
import { emptyFleetState, type FleetState } from "./state.js";
import { summarizeFleet } from "./summary.js";
import { SummaryIndex, type FleetChange, type FleetSource } from "./summary-index.js";

const WIDE = { nodes: ["n1", "n2", "n3", "n4", "all"], modules: ["alpha", "beta", "gamma"] };
/** Few names: the same cells change again and again, and each is among the first listed. */
const NARROW = { nodes: ["n1", "n2", "all"], modules: ["alpha"] };
const BUILDS = ["1-aaaaaaaa", "2-bbbbbbbb", "3-cccccccc"];
const T0 = Date.parse("2026-01-01T01:00:00.000Z");
const at = (ms: number) => new Date(ms).toISOString();

/** One change to one map over these names: its key and its new value (undefined: deleted). */
interface Names {
  readonly nodes: string[];
  readonly modules: string[];
  /** Only changes of these maps (every map when omitted). */
  readonly only?: readonly FleetSource[];
}

function changeOver({ nodes, modules, only }: Names) {
  const node = fc.constantFrom(...nodes);
  const module = fc.constantFrom(...modules);
  const build = fc.constantFrom(...BUILDS);
  const cellKey = fc.tuple(node, module).map(([n, m]) => `${n}.${m}`);
  /** A value drawn or, one time in four, a delete. */
  const orDelete = <T>(value: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
    fc.option(value, { nil: undefined, freq: 3 });

  const any = fc.oneof(
    fc.record({
      source: fc.constant("presence" as const),
      key: node,
      value: orDelete(fc.integer({ min: -5_000, max: (3 * PRESENCE_GONE_MS) / 2 })),
    }),
    fc.record({
      source: fc.constant("assignments" as const),
      key: fc.oneof(
        cellKey,
        module.map((m) => `all.${m}`),
        fc.constant("bad key"),
      ),
      value: orDelete(fc.constant(1)),
    }),
    fc.record({
      source: fc.constant("registrations" as const),
      key: module,
      value: orDelete(fc.constant(1)),
    }),
    fc.record({
      source: fc.constant("builds" as const),
      key: fc.tuple(module, build).map(([m, b]) => `${m}.${b}`),
      value: orDelete(
        fc.record({
          status: fc.constantFrom<Build["status"]>("built", "building", "failed"),
          candidate: fc.integer({ min: 1, max: 3 }),
        }),
      ),
    }),
    fc.record({ source: fc.constant("wants" as const), key: cellKey, value: orDelete(build) }),
    fc.record({
      source: fc.constant("have" as const),
      key: cellKey,
      value: orDelete(
        fc.record({
          build,
          health: fc.constantFrom<Health>("starting", "healthy", "failing", "stopped"),
          exits: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
          waiting: fc.boolean(),
        }),
      ),
    }),
    fc.record({
      source: fc.constant("differences" as const),
      key: cellKey,
      value: orDelete(fc.nat(2)),
    }),
    fc.record({
      source: fc.constant("compositions" as const),
      key: node,
      value: orDelete(fc.boolean()),
    }),
    fc.record({
      source: fc.constant("asks" as const),
      key: fc.constantFrom("w-1", "w-2"),
      value: orDelete(fc.record({ module, nodes: fc.subarray(nodes) })),
    }),
    fc.record({
      source: fc.constant("answers" as const),
      key: fc.constantFrom("w-1", "w-2", "w-9"),
      value: orDelete(fc.boolean()),
    }),
    fc.record({
      source: fc.constant("conditions" as const),
      key: fc.tuple(module, fc.constantFrom("said", "other")).map(([m, n]) => `${m}.${n}`),
      value: orDelete(
        fc.record({
          node: fc.option(node, { nil: undefined }),
          level: fc.constantFrom("info", "warning", "error" as const),
          resolved: fc.boolean(),
        }),
      ),
    }),
  );
  return only === undefined ? any : any.filter((c) => only.includes(c.source));
}

/** Batches of changes, each followed by the clock moving on by `tick` ms (now and then back). */
const batches = (names: Names, most: number) =>
  fc.array(
    fc.record({
      changes: fc.array(changeOver(names), { maxLength: most }),
      // Mostly a few seconds on; now and then past a node's threshold; rarely back (which
      // rebuilds the index whole, so it must not hide what a batch alone gets wrong).
      tick: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 5_000 }), weight: 12 },
        { arbitrary: fc.integer({ min: 0, max: PRESENCE_GONE_MS }), weight: 4 },
        { arbitrary: fc.constant(-1_000), weight: 1 },
      ),
    }),
    { minLength: 1, maxLength: 4 * most },
  );

type Drawn = ReturnType<typeof changeOver> extends fc.Arbitrary<infer C> ? C : never;
type Writable<T> = T extends ReadonlyMap<infer K, infer V> ? Map<K, V> : T;
type Mutable = { -readonly [K in keyof FleetState]: Writable<FleetState[K]> };

/** Applies one drawn change to the state; conditions are kept by key beside it. */
function apply(
  s: Mutable,
  c: Drawn,
  conditions: Map<string, FleetState["conditions"][number]>,
): void {
  const maps = s as unknown as Record<FleetSource, Map<string, unknown>>;
  if (c.value === undefined) {
    if (c.source === "conditions") conditions.delete(c.key);
    else maps[c.source].delete(c.key);
    s.conditions = [...conditions.values()];
    return;
  }
  const [first = "", second = ""] = c.key.split(".");
  const v = c.value as never;
  switch (c.source) {
    case "presence":
      s.presence.set(c.key, {
        node: c.key,
        facts: { hostname: c.key, os: "linux", arch: "x64", version: "0" },
        publicKey: "k",
        heartbeat: at(s.now - c.value),
      });
      return;
    case "assignments":
      s.assignments.set(c.key, { by: "ada", at: at(T0) });
      return;
    case "registrations":
      s.registrations.set(c.key, {
        module: c.key,
        source: { kind: "folder", path: "/m" },
        by: "ada",
        at: at(T0),
      } as never);
      return;
    case "builds": {
      const { status, candidate } = c.value;
      s.builds.set(c.key, {
        module: first,
        build: second,
        status,
        candidate,
        bundles: [],
        log: "",
        timings: { started: at(T0) },
      });
      return;
    }
    case "wants":
      s.wants.set(c.key, {
        build: v,
        manifestDigest: "a".repeat(64),
        fingerprint: "f",
        rule: "newest",
        reason: "newest",
      } as never);
      return;
    case "have": {
      const h = c.value as { build: string; health: Health; exits?: number; waiting: boolean };
      s.have.set(c.key, {
        build: h.build,
        fingerprint: "f",
        health: h.health,
        since: at(T0),
        restarts: 1,
        ...(h.exits === undefined ? {} : { exits: { inARow: h.exits, last: at(T0) } }),
        ...(h.waiting
          ? { waitingFor: { what: "waiting for a secret", fix: "`mesh secret set`" } }
          : {}),
      });
      return;
    }
    case "differences":
      s.differences.set(c.key, {
        reasons: Array.from({ length: c.value }, (_, i) => `r${i}`),
      });
      return;
    case "compositions":
      s.compositions.set(
        c.key,
        c.value
          ? ({ node: c.key, verdict: "refused", wanted: {}, reasons: ["two runtimes"] } as never)
          : ({ node: c.key, verdict: "ok", wanted: {}, reasons: [] } as never),
      );
      return;
    case "asks": {
      const a = c.value;
      s.asks.set(c.key, {
        id: c.key,
        what: `${a.module} widens`,
        module: a.module,
        build: BUILDS[0],
        nodes: a.nodes,
        at: at(T0),
      } as never);
      return;
    }
    case "answers":
      s.answers.set(c.key, { answer: c.value ? "yes" : "no", by: "ada", at: at(T0) } as never);
      return;
    case "conditions": {
      const k = c.value as {
        node?: string;
        level: "info" | "warning" | "error";
        resolved: boolean;
      };
      conditions.set(c.key, {
        module: first,
        name: second,
        level: k.level,
        message: `${first} said ${second}`,
        at: at(s.now),
        ...(k.node === undefined ? {} : { node: k.node }),
        ...(k.resolved ? { resolved: true } : {}),
      });
      s.conditions = [...conditions.values()];
      return;
    }
  }
}

/** The property: after each batch the index's summary is the whole one. */
function holds(names: Names, most: number, numRuns: number, base: readonly Drawn[] = []): void {
  fc.assert(
    fc.property(batches(names, most), fc.integer({ min: 1, max: 4 }), (drawn, first) => {
      const s = emptyFleetState(T0) as unknown as Mutable;
      const conditions = new Map<string, FleetState["conditions"][number]>();
      for (const c of base) apply(s, c, conditions);
      const index = new SummaryIndex({ first });
      assert.deepEqual(index.update(s, []), summarizeFleet(s, { first }), "the first");
      for (const { changes, tick } of drawn) {
        for (const c of changes) apply(s, c, conditions);
        s.now += tick;
        const moved: FleetChange[] = changes.map(({ source, key }) => ({ source, key }));
        assert.deepEqual(index.update(s, moved), summarizeFleet(s, { first }));
      }
    }),
    { numRuns },
  );
}

describe("the incremental summary", () => {
  it("equals the whole summary after every batch of changes, for any sequence of them", () => {
    holds(WIDE, 6, 600);
  });

  it("equals it too where few cells change again and again (each among the first listed)", () => {
    holds(NARROW, 10, 1_000);
  });

  it("equals it where every cell is wanted and applying, as module- and node-wide inputs move", () => {
    // Two present nodes with alpha wanted and another build running: a condition, a refused
    // composition, an ask or a build then names each cell's reason.
    const base: Drawn[] = [
      { source: "assignments", key: "all.alpha", value: 1 },
      ...["n1", "n2"].flatMap((n): Drawn[] => [
        { source: "presence", key: n, value: 0 },
        { source: "wants", key: `${n}.alpha`, value: BUILDS[0] as string },
        {
          source: "have",
          key: `${n}.alpha`,
          value: {
            build: BUILDS[1] as string,
            health: "starting",
            exits: undefined,
            waiting: false,
          },
        },
      ]),
    ];
    const only: FleetSource[] = [
      "conditions",
      "compositions",
      "asks",
      "answers",
      "builds",
      "registrations",
    ];
    holds({ ...NARROW, only }, 8, 1_000, base);
  });
});
