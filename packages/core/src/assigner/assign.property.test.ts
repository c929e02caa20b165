import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { assign } from "./assign.js";
import { marksOf } from "./model.js";
import { canonicalJson } from "../fingerprint.js";
import {
  apply,
  assignTo,
  build,
  manifestOf,
  present,
  put,
  reportHave,
  snapshot,
  type MutableSnapshot,
} from "./fixtures.js";

const NODES = ["n1", "n2", "n3"];
const MODULES = ["alpha", "beta"];

/** A small mesh drawn at random: presence, assignments, builds, puts, have histories, answers. */
const mesh = fc.record({
  present: fc.subarray(NODES),
  assignments: fc.subarray([...NODES, "all"].flatMap((t) => MODULES.map((m) => `${t}.${m}`))),
  builds: fc.array(
    fc.record({
      module: fc.constantFrom(...MODULES),
      status: fc.constantFrom("built", "built", "failed", "building" as const),
      widens: fc.boolean(),
    }),
    { maxLength: 6 },
  ),
  puts: fc.array(
    fc.record({
      target: fc.constantFrom(...NODES, "all"),
      module: fc.constantFrom(...MODULES),
      pick: fc.nat(),
    }),
    { maxLength: 2 },
  ),
  have: fc.array(
    fc.record({
      node: fc.constantFrom(...NODES),
      module: fc.constantFrom(...MODULES),
      pick: fc.nat(),
      health: fc.constantFrom("starting", "healthy", "failing" as const),
    }),
    { maxLength: 8 },
  ),
  passes: fc.integer({ min: 1, max: 3 }),
  yes: fc.boolean(),
});

type Drawn = typeof mesh extends fc.Arbitrary<infer T> ? T : never;

/** Builds the drawn mesh; with `reverse`, every map is filled in the opposite order. */
function materialise(d: Drawn, reverse = false): MutableSnapshot {
  const s = snapshot();
  const order = <T>(xs: readonly T[]): T[] => (reverse ? [...xs].reverse() : [...xs]);
  for (const n of order(d.present)) present(s, n);
  for (const key of order(d.assignments)) {
    const [target, module] = key.split(".") as [string, string];
    assignTo(s, target, module);
  }
  const ids: Record<string, string[]> = {};
  const seq: Record<string, number> = {};
  for (const b of d.builds) {
    seq[b.module] = (seq[b.module] ?? 0) + 1;
    const n = seq[b.module] as number;
    const id = build(s, b.module, n, {
      status: b.status,
      manifest: manifestOf(b.module, n, b.widens ? { calls: [`other/t${n}`] } : {}),
    });
    (ids[b.module] ??= []).push(id);
  }
  for (const p of d.puts) {
    const list = ids[p.module] ?? [];
    if (list.length > 0) put(s, p.target, p.module, list[p.pick % list.length] as string);
  }
  for (const h of d.have) {
    const list = ids[h.module] ?? [];
    if (list.length > 0)
      reportHave(s, h.node, h.module, list[h.pick % list.length] as string, h.health);
  }
  if (reverse) {
    // Refill every map in reverse insertion order.
    for (const map of [
      s.presence,
      s.assignments,
      s.candidates,
      s.builds,
      s.manifests,
      s.puts,
      s.have,
    ] as Map<string, unknown>[]) {
      const entries = [...map.entries()].reverse();
      map.clear();
      for (const [k, v] of entries) map.set(k, v);
    }
  }
  return s;
}

/** Passes the drawn number of times, answering every ask yes in between when drawn so. */
function settle(s: MutableSnapshot, d: Drawn): void {
  for (let i = 0; i < d.passes; i++) {
    apply(s, assign(s));
    if (d.yes)
      for (const id of s.own.asks.keys())
        s.answers.set(id, { answer: "yes", by: "ada", at: s.now });
  }
}

const sortedWants = (s: MutableSnapshot): string =>
  canonicalJson(Object.fromEntries([...s.own.wants].sort(([a], [b]) => (a < b ? -1 : 1))));

describe("assign: properties", () => {
  it("a pass over the same snapshot writes nothing the second time", () => {
    fc.assert(
      fc.property(mesh, (d) => {
        const s = materialise(d);
        settle(s, d);
        apply(s, assign(s));
        assert.deepEqual(assign(s).writes, []);
      }),
      { numRuns: 300 },
    );
  });

  it("the wants do not depend on the order keys arrive in", () => {
    fc.assert(
      fc.property(mesh, (d) => {
        const a = materialise(d);
        const b = materialise(d, true);
        settle(a, d);
        settle(b, d);
        assert.equal(sortedWants(a), sortedWants(b));
      }),
      { numRuns: 300 },
    );
  });

  it("a standing put to a usable build is what its placed, present node wants, whatever the order", () => {
    fc.assert(
      fc.property(mesh, fc.boolean(), (d, reverse) => {
        const s = materialise(d, reverse);
        settle(s, d);
        for (const node of d.present) {
          for (const module of MODULES) {
            const placed =
              s.assignments.has(`${node}.${module}`) || s.assignments.has(`all.${module}`);
            const put = s.puts.get(`${node}.${module}`) ?? s.puts.get(`all.${module}`);
            const usable = [...s.builds.values()].some(
              (b) => b.build === put?.build && b.module === module && b.status === "built",
            );
            if (!placed || put === undefined || !usable) continue;
            const want = s.own.wants.get(`${node}.${module}`);
            if (want === undefined) continue; // the composition check may refuse the set
            if (want.rule === "checked") continue;
            assert.equal(want.build, put.build, `${node}.${module}: ${want.rule} ${want.reason}`);
            assert.equal(want.rule, "put");
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a build marked failing on a node is wanted there only when put, or kept with a fix when nothing else ran healthy", () => {
    fc.assert(
      fc.property(mesh, (d) => {
        const s = materialise(d);
        settle(s, d);
        for (const [key, want] of s.own.wants) {
          const record = s.have.get(key);
          const marks = marksOf(record);
          if (!marks.has(want.build) || want.rule === "put") continue;
          assert.equal(want.rule, "newest", `${key} wants ${want.build}, marked failing`);
          assert.match(want.reason, /mesh retry/, `${key}: the reason names the fix`);
          const fallback = (record?.history ?? []).some(
            (h) =>
              h.health === "healthy" &&
              h.build !== undefined &&
              !marks.has(h.build) &&
              [...s.builds.values()].some((b) => b.build === h.build && b.status === "built"),
          );
          assert.equal(fallback, false, `${key} kept a marked build with a healthy one to go to`);
        }
      }),
      { numRuns: 300 },
    );
  });
});
