/** The fleet index: a change names only the nodes it moves, whatever the fleet's size. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fingerprintOf } from "@mesh/core";
import { Fleet } from "./fleet.js";
import { counter, hello, newKeys, presenceOf, viewer, wantOf } from "./test-support.js";

function fleetOf(nodes: number): Fleet {
  const fleet = new Fleet();
  for (const m of [counter, viewer, hello])
    fleet.setManifest(fingerprintOf(m), { ok: true, manifest: m });
  const keys = newKeys();
  for (let i = 0; i < nodes; i++) {
    fleet.setPresence(`n${i}`, presenceOf(`n${i}`, keys));
    fleet.setWant(`n${i}.hello`, wantOf(hello));
  }
  fleet.setWant("n0.viewer", wantOf(viewer));
  fleet.setWant("n1.counter", wantOf(counter));
  fleet.takeDirty();
  return fleet;
}

describe("Fleet", () => {
  it("a want's change dirties its node only", () => {
    const fleet = fleetOf(50);
    fleet.setWant("n7.hello", wantOf(hello, "2-new"));
    assert.deepEqual(fleet.takeDirty(), ["n7"]);
  });

  it("the same want written again dirties nothing", () => {
    const fleet = fleetOf(5);
    fleet.setWant("n3.hello", wantOf(hello));
    assert.deepEqual(fleet.takeDirty(), []);
  });

  it("a heartbeat (only the time moved) dirties nothing; new facts or a new key do", () => {
    const fleet = fleetOf(3);
    const keys = newKeys();
    fleet.setPresence("n2", { ...presenceOf("n2", keys), heartbeat: new Date(0).toISOString() });
    assert.deepEqual(fleet.takeDirty(), ["n2"], "a new key");
    fleet.setPresence("n2", { ...presenceOf("n2", keys), heartbeat: new Date(1).toISOString() });
    assert.deepEqual(fleet.takeDirty(), []);
  });

  it("an owner's keeps dirty the nodes that want it and the nodes that read it", () => {
    const fleet = fleetOf(20);
    fleet.inputsOf("n0"); // n0 reads counter/counts: the index learns it when n0 is composed
    fleet.setKeeps({
      node: "n1",
      module: "counter",
      states: [{ name: "counts", readable: false }],
      at: new Date().toISOString(),
    });
    assert.deepEqual(fleet.takeDirty(), ["n0", "n1"]);
    assert.deepEqual(fleet.ownerStates("counter"), [
      { name: "counts", readable: false },
      { name: "private", readable: false },
    ]);
  });

  it("keeps that leave the owner's states as they were dirty nothing (1,000 nodes first reporting)", () => {
    const fleet = fleetOf(1_000);
    for (let i = 0; i < 1_000; i++) fleet.setWant(`n${i}.counter`, wantOf(counter));
    fleet.inputsOf("n0");
    fleet.takeDirty();
    const states = [
      { name: "counts", readable: true },
      { name: "private", readable: false },
    ];
    for (let i = 0; i < 1_000; i++)
      fleet.setKeeps({ node: `n${i}`, module: "counter", states, at: new Date().toISOString() });
    assert.deepEqual(fleet.takeDirty(), []);
    // One node saying `counts` is no longer readable moves the grants: the owner's nodes and readers.
    fleet.setKeeps({
      node: "n5",
      module: "counter",
      states: [states[1] as (typeof states)[1], { name: "counts", readable: false }],
      at: new Date().toISOString(),
    });
    assert.equal(fleet.takeDirty().length, 1_000);
  });

  it("a state is readable only where the manifest says so and, once said, the keeps too", () => {
    const fleet = fleetOf(2);
    assert.deepEqual(fleet.ownerStates("counter"), [
      { name: "counts", readable: true },
      { name: "private", readable: false },
    ]);
    fleet.setKeeps({
      node: "n1",
      module: "counter",
      states: [
        { name: "counts", readable: true },
        { name: "private", readable: true },
      ],
      at: new Date().toISOString(),
    });
    assert.equal(fleet.ownerStates("counter")?.find((s) => s.name === "private")?.readable, false);
    assert.equal(fleet.ownerStates("nobody"), undefined);
  });

  it("a secret dirties the nodes that want its module", () => {
    const fleet = fleetOf(4);
    fleet.setSecret("viewer.token", true);
    assert.deepEqual(fleet.takeDirty(), ["n0"]);
    assert.equal(fleet.hasSecret("viewer", "token"), true);
  });
});
