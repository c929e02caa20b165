/**
 * Rollouts in waves on a real bus (issue 22): the assigner on its own grant, five simulated hosts
 * each on its own host grant, the operator's policy and steering on the operator's grant.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KvBucket, type MeshBus } from "@mesh/bus";
import { Bucket, type Rollout, type RolloutPolicy, type RolloutSteer } from "@mesh/protocol";
import { assignerBus } from "./test-assigner.js";
import type { Behaviour } from "./test-sim-hosts.js";
import { NODES, POLICY, fleetOnBuild1, killedAtWave2 } from "./test-waves.js";

const bus = assignerBus({ hosts: NODES });

/** Five nodes on build 1 of hello, healthy; build 2 added. */
async function fleetOnBuild2(policy: RolloutPolicy = POLICY) {
  const f = await fleetOnBuild1(bus, { policy, record: recordOf });
  const b2 = await bus.addBuild(2);
  return { ...f, b2 };
}

async function recordOf(): Promise<Rollout | undefined> {
  const rollouts = await KvBucket.open(bus.admin, Bucket.rollouts);
  return (await rollouts.get("hello"))?.value;
}

async function steer(
  operator: MeshBus,
  build: string,
  action: RolloutSteer["action"],
  attempt?: number,
) {
  const steers = await KvBucket.open(operator, Bucket.rolloutSteers);
  await steers.put("hello", {
    build,
    action,
    ...(attempt === undefined ? {} : { attempt }),
    by: "ada",
    at: new Date().toISOString(),
  });
}

describe("rollouts in waves on a real bus (issue 22)", () => {
  it("a good build goes canary → batches → all, never more than a batch running it unproven", async () => {
    await using f = await fleetOnBuild2();
    const { a, sim, b2 } = f;
    await a.until(async () => (await sim.wanting(b2)).length === 1, "the canary");
    assert.deepEqual(await sim.wanting(b2), ["n1"]);
    assert.equal((await sim.want("n5"))?.rule, "waves");
    const waves: string[][] = [];
    for (let i = 0; i < 40; i++) {
      const r = await recordOf();
      if (r !== undefined && r.build === b2 && waves.length < r.wave) waves.push(r.waveNodes);
      if (r?.build === b2 && r.status === "done") break;
      const unproven = (await sim.wanting(b2)).filter((n) => (sim.ran(n, b2) ?? 0) < 20);
      assert.ok(unproven.length <= 2, `more than a batch unproven: ${unproven.join(", ")}`);
      await f.step(5);
    }
    assert.deepEqual(waves, [["n1"], ["n2", "n3"], ["n4", "n5"]]);
    assert.equal((await recordOf())?.status, "done");
    assert.deepEqual(await sim.wanting(b2), NODES);
  });

  it("a build whose process exits on start never runs beyond the canary; every node ends on build 1, the halt said", async () => {
    await using f = await fleetOnBuild2();
    const { a, sim, b1, b2 } = f;
    await a.until(async () => (await sim.wanting(b2)).length === 1, "the canary");
    const crashes: Behaviour = (_n, build) => (build === b2 ? "failing" : "healthy");
    for (let i = 0; i < 10 && (await recordOf())?.status !== "failed"; i++) {
      await f.step(5, crashes);
    }
    await a.until(async () => (await sim.wanting(b1)).length === 5, "every node on build 1");
    assert.equal((await recordOf())?.status, "failed");
    for (const n of ["n2", "n3", "n4", "n5"]) {
      assert.equal(sim.seen.get(n)?.has(b2), false, `${n} was never given build 2`);
    }
    const said = await bus.lastCondition("rollout-failed-hello");
    assert.equal(said?.level, "error");
    assert.match(said?.message ?? "", new RegExp(`build ${b2} halted at wave 1`));
    assert.match(said?.message ?? "", /n1 \(exited with 1 at start\)/);
    assert.match(said?.message ?? "", /mesh rollout retry hello/);
  });

  it("a build failing after 40 s is stopped at its batch and every node is set back", async () => {
    await using f = await fleetOnBuild2({
      ...POLICY,
      "min-healthy": "60s",
    });
    const { a, sim, b1, b2 } = f;
    // n2, in the batch after the canary, fails once it has run 40 s.
    const late: Behaviour = (n, build, ran) =>
      n === "n2" && build === b2 && ran >= 40 ? "failing" : "healthy";
    for (let i = 0; i < 60 && (await recordOf())?.status !== "failed"; i++) {
      await f.step(5, late);
    }
    const r = await recordOf();
    assert.equal(r?.status, "failed");
    assert.equal(r?.wave, 2, "stopped at n2's batch");
    assert.deepEqual(
      r?.failed?.nodes.map((n) => n.node),
      ["n2"],
    );
    await a.until(async () => (await sim.wanting(b1)).length === 5, "every node on build 1");
    for (const n of ["n4", "n5"])
      assert.equal(sim.seen.get(n)?.has(b2), false, `${n} never given it`);
  });

  it("pause holds the next wave, resume gives it, promote skips the gates, abort sets every node back", async () => {
    await using f = await fleetOnBuild2();
    const { a, sim, operator, b1, b2 } = f;
    await a.until(async () => (await sim.wanting(b2)).length === 1, "the canary");
    await steer(operator, b2, "pause");
    await a.until(async () => (await recordOf())?.status === "paused", "paused");
    for (let i = 0; i < 8; i++) await f.step(5);
    assert.deepEqual(await sim.wanting(b2), ["n1"], "no wave while paused");
    await steer(operator, b2, "resume");
    await a.until(async () => (await sim.wanting(b2)).length === 3, "the next wave on resume");
    await steer(operator, b2, "promote");
    await a.until(async () => (await sim.wanting(b2)).length === 5, "every node on promote");
    await steer(operator, b2, "abort");
    await a.until(async () => (await sim.wanting(b1)).length === 5, "every node back on abort");
    assert.equal((await recordOf())?.status, "aborted");
  });

  it("an assigner killed (SIGKILL) mid-rollout and started again changes nothing, then goes on", async () => {
    await using f = await fleetOnBuild2();
    await f.a.until(async () => (await f.sim.wanting(f.b2)).length === 1, "the canary");
    const wants = await bus.wants();
    await killedAtWave2(bus, f, {
      record: recordOf,
      state: async () => ({
        record: await recordOf(),
        wants: await Promise.all(NODES.map(async (n) => (await wants.get(`${n}.hello`))?.value)),
      }),
      done: async () => assert.deepEqual(await f.sim.wanting(f.b2), NODES),
    });
  });
});
