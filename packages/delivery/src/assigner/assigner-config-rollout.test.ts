/**
 * A config value in waves on a real bus (issue 22 item 4, decision 0131): the assigner on its own
 * grant writing nodes' values into mesh-config, five simulated hosts each on its own host grant
 * reporting which value their module sees, the operator's request and steering on the operator's
 * grant.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { KvBucket, MeshBus, writeCredential } from "@mesh/bus";
import { waitFor } from "@mesh/bus/testing";
import {
  Bucket,
  Principal,
  type ConfigRollout,
  type ConfigRolloutAction,
  type RolloutPolicy,
} from "@mesh/protocol";
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

/** Five nodes on build 1 of hello, healthy, greeting "Hello" mesh-wide; "Hi" requested in waves. */
async function fleetSaysHello() {
  await bus.freshLayout();
  const [b1] = await bus.seed({ nodes: NODES.length, builds: 1 });
  const operator = await MeshBus.connect(bus.credential(Principal.operator));
  const policies = await KvBucket.open(operator, Bucket.rolloutPolicies);
  await policies.put("hello", { policy: POLICY, by: "ada", at: T0 });
  const config = await KvBucket.open(operator, Bucket.config);
  await config.put("hello.greeting", { value: "Hello", by: "ada", at: T0 });
  const sim = await SimHosts.start(bus, NODES);
  const a = await bus.startAssigner();
  await a.until(async () => (await sim.wanting(b1 as string)).length === 5, "build 1 everywhere");
  await sim.step(1);
  const requests = await KvBucket.open(operator, Bucket.configRollouts);
  await requests.put("hello.greeting", { value: "Hi", by: "ada", at: new Date().toISOString() });
  const waves = await KvBucket.open(bus.admin, Bucket.configWaves);
  return { a, sim, operator, config, requests, waves };
}

async function recordOf(waves: KvBucket<ConfigRollout>): Promise<ConfigRollout | undefined> {
  return (await waves.get("hello.greeting"))?.value;
}

const ended = (r: ConfigRollout | undefined): boolean =>
  r !== undefined && r.status !== "rolling" && r.status !== "paused";

/** One step of the fleet's clock, then a pass of the assigner after it (none once it ended). */
async function step(a: Assigner, sim: SimHosts, seconds: number, behaviour?: Behaviour) {
  const before = a.passes.length;
  await sim.step(seconds, behaviour);
  const waves = await KvBucket.open(bus.admin, Bucket.configWaves);
  await a.until(
    async () => a.passes.length > before || ended(await recordOf(waves)),
    "a pass after the step",
  );
}

async function seeing(sim: SimHosts, value: string): Promise<string[]> {
  const out: string[] = [];
  for (const n of NODES) if ((await sim.greetingOn(n)) === value) out.push(n);
  return out;
}

async function steer(requests: KvBucket<unknown>, action: ConfigRolloutAction): Promise<void> {
  const standing = (await requests.get("hello.greeting"))?.value as Record<string, unknown>;
  await requests.put("hello.greeting", {
    ...standing,
    steer: { action, by: "ada", at: new Date().toISOString() },
  });
}

/** A module that refuses "Hi": failing as soon as it sees it. */
const refusesHi: Behaviour = (_n, _b, _r, greeting) =>
  greeting.value === "Hi" ? "failing" : "healthy";

describe("a config value in waves on a real bus (issue 22 item 4)", () => {
  it("a good value goes canary → batches → all, never more than a batch unproven, then is the mesh-wide value", async () => {
    const { a, sim, operator, config, waves } = await fleetSaysHello();
    try {
      await a.until(async () => (await seeing(sim, "Hi")).length === 1, "the canary");
      assert.deepEqual(await seeing(sim, "Hi"), ["n1"]);
      const given: string[][] = [];
      for (let i = 0; i < 40; i++) {
        const r = await recordOf(waves);
        if (r !== undefined && given.length < r.wave) given.push(r.waveNodes);
        if (r?.status === "done") break;
        // Unproven: given "Hi", and not yet reported seeing it for 20 s.
        const unproven: string[] = [];
        for (const n of await seeing(sim, "Hi")) if (sim.seenFor(n, "Hi") < 20) unproven.push(n);
        assert.ok(unproven.length <= 2, `more than a batch unproven: ${unproven.join(", ")}`);
        await step(a, sim, 5);
      }
      assert.deepEqual(given, [["n1"], ["n2", "n3"], ["n4", "n5"]]);
      assert.equal((await recordOf(waves))?.status, "done");
      await a.until(
        async () => (await config.keys("hello.greeting.*")).length === 0,
        "the nodes' values gone",
      );
      assert.equal((await config.get("hello.greeting"))?.value.value, "Hi");
      assert.deepEqual(await seeing(sim, "Hi"), NODES);
    } finally {
      await a.stop();
      await sim.close();
      await operator.close();
    }
  });

  it("a value the module refuses never goes beyond the canary; every node ends on the mesh-wide value, the halt said", async () => {
    const { a, sim, operator, config, waves } = await fleetSaysHello();
    try {
      await a.until(async () => (await seeing(sim, "Hi")).length === 1, "the canary");
      for (let i = 0; i < 10 && (await recordOf(waves))?.status !== "failed"; i++) {
        assert.ok((await seeing(sim, "Hi")).length <= 1, "never beyond the canary");
        await step(a, sim, 5, refusesHi);
      }
      assert.equal((await recordOf(waves))?.status, "failed");
      await a.until(async () => (await seeing(sim, "Hello")).length === 5, "every node on Hello");
      assert.equal((await config.get("hello.greeting"))?.value.value, "Hello");
      const said = await bus.lastCondition("config-rollout-failed-hello-greeting");
      assert.equal(said?.level, "error");
      assert.match(said?.message ?? "", /halted at wave 1 of 3: n1 \(exited with 1 at start\)/);
    } finally {
      await a.stop();
      await sim.close();
      await operator.close();
    }
  });

  it("pause holds the next wave, resume gives it, abort takes the value back everywhere", async () => {
    const { a, sim, operator, requests, waves } = await fleetSaysHello();
    try {
      await a.until(async () => (await seeing(sim, "Hi")).length === 1, "the canary");
      await steer(requests, "pause");
      await a.until(async () => (await recordOf(waves))?.status === "paused", "paused");
      for (let i = 0; i < 8; i++) await step(a, sim, 5);
      assert.deepEqual(await seeing(sim, "Hi"), ["n1"], "no wave while paused");
      await steer(requests, "resume");
      await a.until(async () => (await seeing(sim, "Hi")).length === 3, "the next wave on resume");
      await steer(requests, "abort");
      await a.until(async () => (await seeing(sim, "Hello")).length === 5, "every node back");
      assert.equal((await recordOf(waves))?.status, "aborted");
    } finally {
      await a.stop();
      await sim.close();
      await operator.close();
    }
  });

  it("an assigner killed (SIGKILL) mid config rollout and started again changes nothing, then goes on", async () => {
    const { a, sim, operator, config, waves } = await fleetSaysHello();
    await a.until(async () => (await seeing(sim, "Hi")).length === 1, "the canary");
    await a.stop();
    const dir = await mkdtemp(join(tmpdir(), "mesh-config-rollout-kill-"));
    const credential = join(dir, "assigner.json");
    await writeCredential(credential, bus.credential(Principal.assigner));
    const state = async () => ({
      record: await recordOf(waves),
      values: await Promise.all(NODES.map(async (n) => sim.greetingOn(n))),
    });
    let assigner = startAssignerProcess(credential);
    const stepped = async (seconds: number) => {
      const before = assigner.passes.length;
      await sim.step(seconds);
      await waitFor(async () => assigner.passes.length > before || ended(await recordOf(waves)), {
        what: "a pass after the step",
        timeout: 180_000,
      });
    };
    try {
      await assigner.firstPass;
      for (let i = 0; i < 20 && (await recordOf(waves))?.wave !== 2; i++) await stepped(5);
      assert.equal((await recordOf(waves))?.wave, 2);
      const before = await state();
      await assigner.kill();
      assigner = startAssignerProcess(credential);
      await assigner.firstPass;
      assert.match(assigner.passes[0] ?? "", /pass 1: every node, 0 write\(s\)/);
      assert.deepEqual(await state(), before, "the restart neither restarted nor advanced it");
      for (let i = 0; i < 30 && (await recordOf(waves))?.status !== "done"; i++) await stepped(5);
      assert.equal((await recordOf(waves))?.status, "done");
      await waitFor(async () => (await config.keys("hello.greeting.*")).length === 0, {
        what: "the nodes' values gone",
        timeout: 60_000,
      });
      assert.deepEqual(await seeing(sim, "Hi"), NODES);
    } finally {
      await assigner.kill();
      await sim.close();
      await operator.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
