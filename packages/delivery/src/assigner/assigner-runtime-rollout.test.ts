/**
 * The tool runtime in waves on a real bus (issue 22 item 4: "a new build of node-tools uses the
 * waves like any module"): node-tools assigned to five nodes with its own manifest's shape (the
 * runtime bundle, the broker secret), the assigner on its own grant, five simulated hosts each on
 * its own host grant reporting the runtime they run. A new runtime goes canary → batches → all;
 * one that exits on start halts at the canary and every node keeps, or goes back to, the runtime
 * it ran.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KvBucket, MeshBus } from "@mesh/bus";
import { Bucket, Principal, type Rollout, type RolloutPolicy } from "@mesh/protocol";
import { NODE_TOOLS, T0, addBuildOf } from "./test-fleet.js";
import { assignerBus } from "./test-assigner.js";
import { SimHosts, type Behaviour } from "./test-sim-hosts.js";

const NODES = ["n1", "n2", "n3", "n4", "n5"];
const RUNTIME = NODE_TOOLS.name;
const bus = assignerBus({ hosts: NODES });

/** Canary 1, then batches of 2, each proven by 20 s of health. */
const POLICY: RolloutPolicy = {
  canary: 1,
  batch: 2,
  "min-healthy": "20s",
  "healthy-deadline": "2m",
};

/** Five nodes running runtime build 1, healthy; runtime build 2 added. */
async function fleetOnRuntime1() {
  await bus.freshLayout();
  const [t1] = await bus.seed({ nodes: NODES.length, builds: 1, module: NODE_TOOLS });
  const operator = await MeshBus.connect(bus.credential(Principal.operator));
  await (
    await KvBucket.open(operator, Bucket.rolloutPolicies)
  ).put(RUNTIME, { policy: POLICY, by: "ada", at: T0 });
  const sim = await SimHosts.start(bus, NODES, RUNTIME);
  const a = await bus.startAssigner();
  await a.until(async () => (await sim.wanting(t1 as string)).length === 5, "runtime 1 everywhere");
  await sim.step(1);
  const rollouts = await KvBucket.open(bus.admin, Bucket.rollouts);
  const t2 = await addBuildOf(bus.admin, NODE_TOOLS, 2);
  const record = async (): Promise<Rollout | undefined> => (await rollouts.get(RUNTIME))?.value;
  /** One step of the fleet's clock, then a pass after it (none comes once the rollout ended). */
  const step = async (seconds: number, behaviour?: Behaviour): Promise<void> => {
    const before = a.passes.length;
    await sim.step(seconds, behaviour);
    await a.until(async () => {
      const r = await record();
      return a.passes.length > before || (r !== undefined && /done|failed/.test(r.status));
    }, "a pass after the step");
  };
  const close = async (): Promise<void> => {
    await a.stop();
    await sim.close();
    await operator.close();
  };
  return { a, sim, record, step, close, t1: t1 as string, t2 };
}

describe("the tool runtime in waves on a real bus (issue 22 item 4)", () => {
  it("a new build of node-tools goes canary → batches → all, never more than a batch unproven", async () => {
    const { a, sim, record, step, close, t1, t2 } = await fleetOnRuntime1();
    try {
      await a.until(async () => (await sim.wanting(t2)).length === 1, "the canary");
      assert.deepEqual(await sim.wanting(t2), ["n1"]);
      const held = await sim.want("n5");
      assert.deepEqual([held?.build, held?.rule], [t1, "waves"], "n5 keeps its runtime");
      const waves: string[][] = [];
      for (let i = 0; i < 40; i++) {
        const r = await record();
        if (r?.build === t2 && waves.length < r.wave) waves.push(r.waveNodes);
        if (r?.build === t2 && r.status === "done") break;
        const unproven = (await sim.wanting(t2)).filter((n) => (sim.ran(n, t2) ?? 0) < 20);
        assert.ok(unproven.length <= 2, `more than a batch unproven: ${unproven.join(", ")}`);
        await step(5);
      }
      assert.deepEqual(waves, [["n1"], ["n2", "n3"], ["n4", "n5"]]);
      assert.equal((await record())?.status, "done");
      assert.deepEqual(await sim.wanting(t2), NODES);
    } finally {
      await close();
    }
  });

  it("a node-tools build that exits on start halts at the canary; every node ends on runtime 1, the halt said", async () => {
    const { a, sim, record, step, close, t1, t2 } = await fleetOnRuntime1();
    try {
      await a.until(async () => (await sim.wanting(t2)).length === 1, "the canary");
      const crashes: Behaviour = (_n, build) => (build === t2 ? "failing" : "healthy");
      for (let i = 0; i < 10 && (await record())?.status !== "failed"; i++) await step(5, crashes);
      await a.until(async () => (await sim.wanting(t1)).length === 5, "every node on runtime 1");
      assert.equal((await record())?.status, "failed");
      for (const n of ["n2", "n3", "n4", "n5"])
        assert.equal(sim.seen.get(n)?.has(t2), false, `${n} was never given runtime 2`);
      const said = await bus.lastCondition(`rollout-failed-${RUNTIME}`);
      assert.equal(said?.level, "error");
      assert.match(said?.message ?? "", new RegExp(`node-tools build ${t2} halted at wave 1`));
      assert.match(said?.message ?? "", /mesh rollout retry node-tools/);
    } finally {
      await close();
    }
  });
});
