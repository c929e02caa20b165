import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { NeedResource, ProcessResource, Resource } from "@mesh/protocol";
import { fingerprintOf } from "@mesh/core";
import { emptyState, type AppliedState } from "./applied-state.js";
import { desiredOf, isEmptyPlan, planOf } from "./plan.js";

const D1 = "1".repeat(64);
const D2 = "2".repeat(64);
const ROOT = "/var/lib/mesh";

const proc = (
  module: string,
  name: string,
  digest: string,
  restartOn: string[] = [],
): ProcessResource => ({
  id: `${module}.process-${name}`,
  type: "process",
  name,
  module,
  source: `mesh-artifacts/${digest}`,
  digest,
  path: `${ROOT}/bundles/${module}/main`,
  run: ["node", "main.js"],
  env: {},
  "restart-on": restartOn,
});
const archive = (module: string, bundle: string, digest: string): Resource => ({
  id: `${module}.bundle-${bundle}`,
  type: "archive",
  module,
  source: `mesh-artifacts/${digest}`,
  digest,
  path: `${ROOT}/bundles/${module}/${bundle}`,
});
const need = (module: string, sealed: string): NeedResource => ({
  id: `${module}.need-broker`,
  type: "need",
  kind: "credential",
  module,
  name: "broker",
  path: `/run/mesh/${module}.json`,
  sealed,
});

/** The state after applying `resources` completely, as the host records it. */
function appliedAfter(
  resources: readonly Resource[],
  config: (m: string) => unknown = () => ({}),
): AppliedState {
  const desired = desiredOf(resources, config);
  const state = emptyState();
  for (const [path, d] of desired.deliveries)
    state.deliveries[path] = { module: d.module, digest: d.digest };
  for (const [id, n] of desired.needs)
    state.needs[id] = { module: n.module, path: n.path, fingerprint: fingerprintOf(n) };
  for (const [id, p] of desired.processes) {
    const { module, name } = p.resource;
    state.processes[id] = { module, name, effective: p.effective, pid: 1, startTime: "1" };
  }
  return state;
}

/** The plan that takes a machine on which `before` stands applied to `after`, with no config. */
const planFrom = (before: readonly Resource[], after: readonly Resource[]) =>
  planOf(
    desiredOf(after, () => ({})),
    appliedAfter(before),
  );

describe("planOf", () => {
  test("from nothing: fetch every bundle, write every need, start every process; stop and remove nothing", () => {
    const resources = [archive("a", "tools", D1), need("a", "s1"), proc("a", "p", D2)];
    const plan = planFrom([], resources);
    assert.deepEqual(plan.fetch.map((d) => d.path).sort(), [
      `${ROOT}/bundles/a/main`,
      `${ROOT}/bundles/a/tools`,
    ]);
    assert.deepEqual(
      plan.writeNeeds.map((n) => n.id),
      ["a.need-broker"],
    );
    assert.deepEqual(plan.start, ["a.process-p"]);
    assert.deepEqual([plan.stop, plan.removeNeeds, plan.removeDeliveries], [[], [], []]);
  });

  test("applied as composed: nothing to do", () => {
    const resources = [
      archive("a", "tools", D1),
      need("a", "s1"),
      proc("a", "p", D2, ["a.bundle-tools"]),
    ];
    assert.ok(isEmptyPlan(planFrom(resources, resources)));
  });

  test("a new digest restarts exactly the processes whose restart-on names it", () => {
    const before = [
      archive("a", "tools", D1),
      proc("a", "p", D2, ["a.bundle-tools"]),
      proc("b", "q", D2),
    ];
    const after = [
      archive("a", "tools", D2),
      proc("a", "p", D2, ["a.bundle-tools"]),
      proc("b", "q", D2),
    ];
    const plan = planFrom(before, after);
    assert.deepEqual(
      plan.fetch.map((d) => d.path),
      [`${ROOT}/bundles/a/tools`],
    );
    assert.deepEqual(plan.stop, ["a.process-p"]);
    assert.deepEqual(plan.start, ["a.process-p"]);
  });

  test("a resealed need restarts a process that restarts on it, not others", () => {
    const before = [need("a", "s1"), proc("a", "p", D1, ["a.need-broker"]), proc("a", "q", D1)];
    const after = [need("a", "s2"), proc("a", "p", D1, ["a.need-broker"]), proc("a", "q", D1)];
    const plan = planFrom(before, after);
    assert.deepEqual(
      plan.writeNeeds.map((n) => n.id),
      ["a.need-broker"],
    );
    assert.deepEqual(plan.stop, ["a.process-p"]);
    assert.deepEqual(plan.start, ["a.process-p"]);
  });

  test("a renewed credential (its key the same) is written again and restarts nothing; a new key restarts", () => {
    const keyed = (sealed: string, holder: string): NeedResource => ({
      ...need("a", sealed),
      holder,
    });
    const before = [keyed("s1", "UKEY1"), proc("a", "p", D1, ["a.need-broker"])];
    const renewed = [keyed("s2", "UKEY1"), proc("a", "p", D1, ["a.need-broker"])];
    const plan = planFrom(before, renewed);
    assert.deepEqual(
      plan.writeNeeds.map((n) => n.id),
      ["a.need-broker"],
    );
    assert.deepEqual([plan.stop, plan.start], [[], []]);
    const moved = [keyed("s3", "UKEY2"), proc("a", "p", D1, ["a.need-broker"])];
    const regranted = planFrom(before, moved);
    assert.deepEqual([regranted.stop, regranted.start], [["a.process-p"], ["a.process-p"]]);
  });

  test("a config value restarts the processes that restart on config only", () => {
    const resources = [proc("a", "p", D1, ["config"]), proc("a", "q", D1)];
    const applied = appliedAfter(resources, () => ({ greeting: "hello" }));
    const plan = planOf(
      desiredOf(resources, () => ({ greeting: "hi" })),
      applied,
    );
    assert.deepEqual([plan.stop, plan.start], [["a.process-p"], ["a.process-p"]]);
  });

  test("emptied: stop every process, remove every need and bundle", () => {
    const resources = [archive("a", "tools", D1), need("a", "s1"), proc("a", "p", D2)];
    const plan = planFrom(resources, []);
    assert.deepEqual(plan.stop, ["a.process-p"]);
    assert.deepEqual(plan.removeNeeds, ["a.need-broker"]);
    assert.deepEqual(plan.removeDeliveries, [`${ROOT}/bundles/a/main`, `${ROOT}/bundles/a/tools`]);
    assert.deepEqual([plan.fetch, plan.start, plan.writeNeeds], [[], [], []]);
  });

  test("two digests for one path are a conflict of the module", () => {
    const desired = desiredOf([proc("a", "p", D1), proc("a", "q", D2)], () => ({}));
    assert.match(desired.conflicts.get("a") ?? "", /already asks for/);
  });

  test("applying the plan's result plans nothing, and the plan does not depend on resource order", () => {
    const resourceArb = fc.uniqueArray(
      fc.record({
        module: fc.constantFrom("a", "b", "c"),
        name: fc.constantFrom("p", "q"),
        digest: fc.constantFrom(D1, D2),
        restartOn: fc.subarray(["config", "a.need-broker", "b.bundle-tools"]),
      }),
      { selector: (r) => `${r.module}.${r.name}` },
    );
    fc.assert(
      fc.property(resourceArb, fc.boolean(), (specs, withNeed) => {
        // One bundle path per module and process name, so no conflicts.
        const resources: Resource[] = specs.map((s) => ({
          ...proc(s.module, s.name, s.digest, s.restartOn),
          path: `${ROOT}/bundles/${s.module}/${s.name}`,
        }));
        if (withNeed) resources.push(need("a", "s"));
        const desired = desiredOf(resources, () => ({ k: 1 }));
        assert.ok(
          isEmptyPlan(
            planOf(
              desired,
              appliedAfter(resources, () => ({ k: 1 })),
            ),
          ),
        );
        const reversed = desiredOf([...resources].reverse(), () => ({ k: 1 }));
        assert.deepEqual(planOf(reversed, emptyState()), planOf(desired, emptyState()));
      }),
    );
  });
});
