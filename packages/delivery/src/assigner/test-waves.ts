/**
 * What the rollout tests on a real bus share, a build's and a config value's alike: five
 * simulated hosts on build 1 of hello, healthy, under a policy of waves; a step of their clock
 * followed by a pass of the assigner; and the assigner as its own process, killed (SIGKILL) at
 * wave 2 and started again.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KvBucket, MeshBus, writeCredential } from "@mesh/bus";
import { waitFor } from "@mesh/bus/testing";
import { Bucket, Principal, type RolloutPolicy, type RolloutStatus } from "@mesh/protocol";
import { T0 } from "./test-fleet.js";
import { startAssignerProcess, type AssignerBus } from "./test-assigner.js";
import { SimHosts, type Behaviour } from "./test-sim-hosts.js";

export const NODES = ["n1", "n2", "n3", "n4", "n5"];

/** Canary 1, then batches of 2, each proven by 20 s of health. */
export const POLICY: RolloutPolicy = {
  canary: 1,
  batch: 2,
  "min-healthy": "20s",
  "healthy-deadline": "2m",
};

type Assigner = Awaited<ReturnType<AssignerBus["startAssigner"]>>;

/** The part of a rollout's record the steps read: where it is, and whether it ended. */
export interface RecordSeen {
  readonly status: RolloutStatus;
  readonly wave: number;
}

/** Five hosts on build 1 of hello, an assigner, the operator's connection; closed together. */
export interface WaveFleet extends AsyncDisposable {
  readonly a: Assigner;
  readonly sim: SimHosts;
  readonly operator: MeshBus;
  readonly b1: string;
  /** One step of the fleet's clock, then a pass of the assigner after it (none once it ended). */
  step(seconds: number, behaviour?: Behaviour): Promise<void>;
}

/**
 * A fresh layout with NODES on build 1 of hello, healthy, under `policy`; `seed` writes more on
 * the operator's grant before the assigner starts. `record` reads the rollout's record.
 */
export async function fleetOnBuild1(
  bus: AssignerBus,
  options: {
    record: () => Promise<RecordSeen | undefined>;
    policy?: RolloutPolicy;
    seed?: (operator: MeshBus) => Promise<void>;
  },
): Promise<WaveFleet> {
  await bus.freshLayout();
  const [b1] = await bus.seed({ nodes: NODES.length, builds: 1 });
  const operator = await MeshBus.connect(bus.credential(Principal.operator));
  const policies = await KvBucket.open(operator, Bucket.rolloutPolicies);
  await policies.put("hello", { policy: options.policy ?? POLICY, by: "ada", at: T0 });
  await options.seed?.(operator);
  const sim = await SimHosts.start(bus, NODES);
  const a = await bus.startAssigner();
  await a.until(async () => (await sim.wanting(b1 as string)).length === 5, "build 1 everywhere");
  await sim.step(1);
  return {
    a,
    sim,
    operator,
    b1: b1 as string,
    async step(seconds, behaviour) {
      const before = a.passes.length;
      await sim.step(seconds, behaviour);
      await a.until(
        async () => a.passes.length > before || ended(await options.record()),
        "a pass after the step",
      );
    },
    async [Symbol.asyncDispose]() {
      await a.stop();
      await sim.close();
      await operator.close();
    },
  };
}

/** Done or halted: no heartbeat is news then, so no pass may come. */
const ended = (r: RecordSeen | undefined): boolean =>
  r !== undefined && r.status !== "rolling" && r.status !== "paused";

/**
 * Stops the fleet's assigner and runs `mesh assigner` as its own process instead, steps the clock
 * to wave 2, kills it (SIGKILL) and starts it again: its first pass writes nothing and `state`
 * reads the same as before the kill. Then steps until the rollout is done, and checks `done`
 * while the process still runs.
 */
export async function killedAtWave2(
  bus: AssignerBus,
  f: WaveFleet,
  options: {
    record: () => Promise<RecordSeen | undefined>;
    state: () => Promise<unknown>;
    done: () => Promise<void>;
  },
): Promise<void> {
  const { record, state } = options;
  await f.a.stop();
  const dir = await mkdtemp(join(tmpdir(), "mesh-rollout-kill-"));
  const credential = join(dir, "assigner.json");
  await writeCredential(credential, bus.credential(Principal.assigner));
  let assigner = startAssignerProcess(credential);
  /** One step of the clock, then a pass of the assigner process after it. */
  const stepped = async (seconds: number) => {
    const before = assigner.passes.length;
    await f.sim.step(seconds);
    await waitFor(async () => assigner.passes.length > before || ended(await record()), {
      what: "a pass after the step",
      timeout: 180_000,
    });
  };
  try {
    await assigner.firstPass;
    // To wave 2: the canary proven, n2 and n3 given it and not yet proven.
    for (let i = 0; i < 20 && (await record())?.wave !== 2; i++) await stepped(5);
    assert.equal((await record())?.wave, 2);
    const before = await state();
    await assigner.kill();
    assigner = startAssignerProcess(credential);
    await assigner.firstPass;
    assert.match(assigner.passes[0] ?? "", /pass 1: every node, 0 write\(s\)/);
    assert.deepEqual(await state(), before, "the restart neither restarted nor advanced it");
    for (let i = 0; i < 30 && (await record())?.status !== "done"; i++) await stepped(5);
    assert.equal((await record())?.status, "done");
    await options.done();
  } finally {
    await assigner.kill();
    await rm(dir, { recursive: true, force: true });
  }
}
