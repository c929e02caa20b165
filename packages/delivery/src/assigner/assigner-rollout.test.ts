/**
 * Rollouts in waves on a real bus (issue 22): the assigner on its own grant, five simulated hosts
 * each on its own host grant, the operator's policy and steering on the operator's grant.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { KvBucket, MeshBus, writeCredential } from "@mesh/bus";
import {
  Bucket,
  Principal,
  type Rollout,
  type RolloutPolicy,
  type RolloutSteer,
} from "@mesh/protocol";
import { waitFor } from "@mesh/bus/testing";
import { T0 } from "./test-fleet.js";
import { assignerBus, startAssignerProcess } from "./test-assigner.js";
import { SimHosts, type Behaviour } from "./test-sim-hosts.js";

const NODES = ["n1", "n2", "n3", "n4", "n5"];
const bus = assignerBus({ hosts: NODES });

/** Canary 1, then batches of 2, each proven by 20 s of health. */
const POLICY: RolloutPolicy = {
  canary: 1,
  batch: 2,
  "min-healthy": "20s",
  "healthy-deadline": "2m",
};

type Assigner = Awaited<ReturnType<typeof bus.startAssigner>>;

/** Five nodes on build 1 of hello, healthy; build 2 added. */
async function fleetOnBuild1(policy: RolloutPolicy = POLICY) {
  await bus.freshLayout();
  const [b1] = await bus.seed({ nodes: NODES.length, builds: 1 });
  const operator = await MeshBus.connect(bus.credential(Principal.operator));
  const policies = await KvBucket.open(operator, Bucket.rolloutPolicies);
  await policies.put("hello", { policy, by: "ada", at: T0 });
  const sim = await SimHosts.start(bus, NODES);
  const a = await bus.startAssigner();
  await a.until(async () => (await sim.wanting(b1 as string)).length === 5, "build 1 everywhere");
  await sim.step(1);
  const rollouts = await KvBucket.open(bus.admin, Bucket.rollouts);
  const b2 = await bus.addBuild(2);
  return { a, sim, operator, rollouts, b1: b1 as string, b2 };
}

async function recordOf(rollouts: KvBucket<Rollout>): Promise<Rollout | undefined> {
  return (await rollouts.get("hello"))?.value;
}

/**
 * One step of the fleet's clock, then a pass of the assigner after it; or none, once the
 * rollout has ended (done or halted: no heartbeat is news then, so none may come).
 */
async function step(a: Assigner, sim: SimHosts, seconds: number, behaviour?: Behaviour) {
  const before = a.passes.length;
  await sim.step(seconds, behaviour);
  const rollouts = await KvBucket.open(bus.admin, Bucket.rollouts);
  await a.until(
    async () => a.passes.length > before || ended(await recordOf(rollouts)),
    "a pass after the step",
  );
}

const ended = (r: Rollout | undefined): boolean =>
  r !== undefined && r.status !== "rolling" && r.status !== "paused";

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
    const { a, sim, operator, rollouts, b2 } = await fleetOnBuild1();
    try {
      await a.until(async () => (await sim.wanting(b2)).length === 1, "the canary");
      assert.deepEqual(await sim.wanting(b2), ["n1"]);
      assert.equal((await sim.want("n5"))?.rule, "waves");
      const waves: string[][] = [];
      for (let i = 0; i < 40; i++) {
        const r = await recordOf(rollouts);
        if (r !== undefined && r.build === b2 && waves.length < r.wave) waves.push(r.waveNodes);
        if (r?.build === b2 && r.status === "done") break;
        const unproven = (await sim.wanting(b2)).filter((n) => (sim.ran(n, b2) ?? 0) < 20);
        assert.ok(unproven.length <= 2, `more than a batch unproven: ${unproven.join(", ")}`);
        await step(a, sim, 5);
      }
      assert.deepEqual(waves, [["n1"], ["n2", "n3"], ["n4", "n5"]]);
      assert.equal((await recordOf(rollouts))?.status, "done");
      assert.deepEqual(await sim.wanting(b2), NODES);
    } finally {
      await a.stop();
      await sim.close();
      await operator.close();
    }
  });

  it("a build whose process exits on start never runs beyond the canary; every node ends on build 1, the halt said", async () => {
    const { a, sim, operator, rollouts, b1, b2 } = await fleetOnBuild1();
    try {
      await a.until(async () => (await sim.wanting(b2)).length === 1, "the canary");
      const crashes: Behaviour = (_n, build) => (build === b2 ? "failing" : "healthy");
      for (let i = 0; i < 10 && (await recordOf(rollouts))?.status !== "failed"; i++) {
        await step(a, sim, 5, crashes);
      }
      await a.until(async () => (await sim.wanting(b1)).length === 5, "every node on build 1");
      assert.equal((await recordOf(rollouts))?.status, "failed");
      for (const n of ["n2", "n3", "n4", "n5"]) {
        assert.equal(sim.seen.get(n)?.has(b2), false, `${n} was never given build 2`);
      }
      const said = await bus.lastCondition("rollout-failed-hello");
      assert.equal(said?.level, "error");
      assert.match(said?.message ?? "", new RegExp(`build ${b2} halted at wave 1`));
      assert.match(said?.message ?? "", /n1 \(exited with 1 at start\)/);
      assert.match(said?.message ?? "", /mesh rollout retry hello/);
    } finally {
      await a.stop();
      await sim.close();
      await operator.close();
    }
  });

  it("a build failing after 40 s is stopped at its batch and every node is set back", async () => {
    const { a, sim, operator, rollouts, b1, b2 } = await fleetOnBuild1({
      ...POLICY,
      "min-healthy": "60s",
    });
    try {
      // n2, in the batch after the canary, fails once it has run 40 s.
      const late: Behaviour = (n, build, ran) =>
        n === "n2" && build === b2 && ran >= 40 ? "failing" : "healthy";
      for (let i = 0; i < 60 && (await recordOf(rollouts))?.status !== "failed"; i++) {
        await step(a, sim, 5, late);
      }
      const r = await recordOf(rollouts);
      assert.equal(r?.status, "failed");
      assert.equal(r?.wave, 2, "stopped at n2's batch");
      assert.deepEqual(
        r?.failed?.nodes.map((n) => n.node),
        ["n2"],
      );
      await a.until(async () => (await sim.wanting(b1)).length === 5, "every node on build 1");
      for (const n of ["n4", "n5"])
        assert.equal(sim.seen.get(n)?.has(b2), false, `${n} never given it`);
    } finally {
      await a.stop();
      await sim.close();
      await operator.close();
    }
  });

  it("pause holds the next wave, resume gives it, promote skips the gates, abort sets every node back", async () => {
    const { a, sim, operator, rollouts, b1, b2 } = await fleetOnBuild1();
    try {
      await a.until(async () => (await sim.wanting(b2)).length === 1, "the canary");
      await steer(operator, b2, "pause");
      await a.until(async () => (await recordOf(rollouts))?.status === "paused", "paused");
      for (let i = 0; i < 8; i++) await step(a, sim, 5);
      assert.deepEqual(await sim.wanting(b2), ["n1"], "no wave while paused");
      await steer(operator, b2, "resume");
      await a.until(async () => (await sim.wanting(b2)).length === 3, "the next wave on resume");
      await steer(operator, b2, "promote");
      await a.until(async () => (await sim.wanting(b2)).length === 5, "every node on promote");
      await steer(operator, b2, "abort");
      await a.until(async () => (await sim.wanting(b1)).length === 5, "every node back on abort");
      assert.equal((await recordOf(rollouts))?.status, "aborted");
    } finally {
      await a.stop();
      await sim.close();
      await operator.close();
    }
  });

  it("an assigner killed (SIGKILL) mid-rollout and started again changes nothing, then goes on", async () => {
    const { a, sim, operator, rollouts, b2 } = await fleetOnBuild1();
    await a.until(async () => (await sim.wanting(b2)).length === 1, "the canary");
    await a.stop();
    const dir = await mkdtemp(join(tmpdir(), "mesh-rollout-kill-"));
    const credential = join(dir, "assigner.json");
    await writeCredential(credential, bus.credential(Principal.assigner));
    const wants = await bus.wants();
    const state = async () => ({
      record: await recordOf(rollouts),
      wants: await Promise.all(NODES.map(async (n) => (await wants.get(`${n}.hello`))?.value)),
    });
    let assigner = startAssignerProcess(credential);
    /** One step of the clock, then a pass of the assigner process after it. */
    const stepped = async (seconds: number) => {
      const before = assigner.passes.length;
      await sim.step(seconds);
      await waitFor(
        async () => assigner.passes.length > before || ended(await recordOf(rollouts)),
        {
          what: "a pass after the step",
          timeout: 180_000,
        },
      );
    };
    try {
      await assigner.firstPass;
      // To wave 2: the canary proven, n2 and n3 given the build and not yet proven.
      for (let i = 0; i < 20 && (await recordOf(rollouts))?.wave !== 2; i++) await stepped(5);
      assert.equal((await recordOf(rollouts))?.wave, 2);
      const before = await state();
      await assigner.kill();
      assigner = startAssignerProcess(credential);
      await assigner.firstPass;
      assert.match(assigner.passes[0] ?? "", /pass 1: every node, 0 write\(s\)/);
      assert.deepEqual(await state(), before, "the restart neither restarted nor advanced it");
      for (let i = 0; i < 30 && (await recordOf(rollouts))?.status !== "done"; i++)
        await stepped(5);
      assert.equal((await recordOf(rollouts))?.status, "done");
      assert.deepEqual(await sim.wanting(b2), NODES);
    } finally {
      await assigner.kill();
      await sim.close();
      await operator.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
