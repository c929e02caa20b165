/** planNode: what the controller sends a node besides core's resources, and when it refuses. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fingerprintOf } from "@mesh/core";
import { Fleet } from "./fleet.js";
import { planNode, type PlanContext } from "./node-plan.js";
import {
  counter,
  d,
  hello,
  manifest,
  newKeys,
  nodeTools,
  presenceOf,
  viewer,
  viewerInput,
  wantOf,
} from "./test-support.js";

function fleetWith(node: string, modules: (typeof counter)[], present = true): Fleet {
  const fleet = new Fleet();
  for (const m of [counter, viewer, hello, nodeTools]) {
    fleet.setManifest(fingerprintOf(m), { ok: true, manifest: m });
  }
  if (present) fleet.setPresence(node, presenceOf(node, newKeys()));
  for (const m of modules) fleet.setWant(`${node}.${m.module}`, wantOf(m));
  return fleet;
}

const contextOf = (fleet: Fleet): PlanContext => ({
  servers: ["nats://bus:4222"],
  artifactStore: "mesh-artifacts",
  ownerStates: (m) => fleet.ownerStates(m),
});

describe("planNode", () => {
  it("implies a runtime user only where node-tools is, and a module user only for a declared broker", () => {
    const fleet = fleetWith("n1", [counter, viewer, hello, nodeTools]);
    const plan = planNode(fleet.inputsOf("n1"), contextOf(fleet));
    assert.ok(plan.ok);
    assert.deepEqual(plan.principals.map((p) => p.user).sort(), [
      "n1.counter",
      "n1.node-tools",
      "n1.viewer",
    ]);
    const alone = fleetWith("n2", [hello, counter]);
    const plain = planNode(alone.inputsOf("n2"), contextOf(alone));
    assert.ok(plain.ok);
    assert.deepEqual(
      plain.principals.map((p) => p.user),
      ["n2.counter"],
    );
  });

  it("gives each module its build, config defaults and bound values", () => {
    const fleet = fleetWith("n1", [viewer, counter]);
    const plan = planNode(fleet.inputsOf("n1"), contextOf(fleet));
    assert.ok(plan.ok);
    assert.deepEqual(plan.modules["viewer"], {
      build: "1-test",
      manifestDigest: fingerprintOf(viewer),
      config: {},
      bound: {
        node: "n1",
        "read.counter.counts": "counter_counts",
        servers: ["nats://bus:4222"],
      },
    });
    assert.equal(plan.modules["counter"]?.bound["state.counts"], "counter_counts");
  });

  it("gives a mesh part the buckets its manifest names as bound values, and a user granted them (decision 0190)", () => {
    const part = manifest({
      ...viewerInput,
      module: "mesh-assigner",
      reads: ["mesh/builds", "mesh/conditions"],
      writes: ["mesh/puts"],
    });
    const fleet = fleetWith("n1", []);
    fleet.setManifest(fingerprintOf(part), { ok: true, manifest: part });
    fleet.setWant("n1.mesh-assigner", wantOf(part));
    const plan = planNode(fleet.inputsOf("n1"), contextOf(fleet));
    assert.ok(plan.ok);
    // The conditions stream is no bucket a module's code opens as a state: no bound value.
    assert.deepEqual(plan.modules["mesh-assigner"]?.bound, {
      node: "n1",
      "read.mesh.builds": "mesh-builds",
      servers: ["nats://bus:4222"],
      "write.mesh.puts": "mesh-puts",
    });
    const user = plan.principals.find((p) => p.user === "n1.mesh-assigner");
    assert.ok(user !== undefined, "its process has a user of its own");
    assert.deepEqual(plan.grantProblems, []);
  });

  it("refuses, with every reason, a node without presence or with a manifest it cannot use", () => {
    const fleet = fleetWith("n3", [hello], false);
    fleet.setWant("n3.ghost", { ...wantOf(hello), manifestDigest: d("9e") });
    fleet.setManifest(d("8d"), { ok: false, problems: ["not a manifest"] });
    fleet.setWant("n3.broken", { ...wantOf(hello), manifestDigest: d("8d") });
    fleet.setWant("n3.other", wantOf(counter));
    const plan = planNode(fleet.inputsOf("n3"), contextOf(fleet));
    assert.equal(plan.ok, false);
    if (plan.ok) return;
    assert.deepEqual(plan.refusals.map((r) => r.code).sort(), [
      "manifest-invalid",
      "manifest-missing",
      "manifest-module",
      "presence-missing",
    ]);
    for (const r of plan.refusals) assert.ok(r.fix.length > 0);
  });

  it("refuses a node whose presence carries a key that cannot be sealed to, naming the node (one bad presence failed the controller's pass)", () => {
    const fleet = fleetWith("n6", [counter]);
    const presence = fleet.presenceOf("n6");
    assert.ok(presence !== undefined);
    fleet.setPresence("n6", {
      ...presence,
      publicKey: Buffer.from("not a key").toString("base64"),
    });
    const plan = planNode(fleet.inputsOf("n6"), contextOf(fleet));
    assert.equal(plan.ok, false);
    if (plan.ok) return;
    assert.deepEqual(
      plan.refusals.map((r) => r.code),
      ["presence-key-invalid"],
    );
    assert.match(plan.refusals[0]?.reason ?? "", /^n6's presence/);
    assert.equal(planNode(fleetWith("n7", [counter]).inputsOf("n7"), contextOf(fleet)).ok, true);
  });

  it("composes for the root the node's presence names, /var/lib/mesh otherwise", () => {
    const fleet = fleetWith("n5", [counter]);
    const at = (plan: ReturnType<typeof planNode>) =>
      plan.ok ? plan.resources.find((r) => r.type === "process")?.path : undefined;
    assert.equal(
      at(planNode(fleet.inputsOf("n5"), contextOf(fleet))),
      "/var/lib/mesh/bundles/counter/daemon",
    );
    const presence = fleet.presenceOf("n5");
    assert.ok(presence !== undefined);
    fleet.setPresence("n5", { ...presence, facts: { ...presence.facts, root: "/home/ada/.mesh" } });
    assert.equal(
      at(planNode(fleet.inputsOf("n5"), contextOf(fleet))),
      "/home/ada/.mesh/bundles/counter/daemon",
    );
  });

  it("passes core's refusals through: no artifact store", () => {
    const fleet = fleetWith("n4", [hello, nodeTools]);
    const plan = planNode(fleet.inputsOf("n4"), { ...contextOf(fleet), artifactStore: undefined });
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.ok(plan.refusals.every((r) => r.code === "artifact-store-missing"));
  });
});
