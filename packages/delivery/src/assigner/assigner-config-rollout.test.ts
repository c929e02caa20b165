/**
 * A config value in waves on a real bus (issue 22 item 4, decision 0131): the assigner on its own
 * grant writing nodes' values into mesh-config, five simulated hosts each on its own host grant
 * reporting which value their module sees, the operator's request and steering on the operator's
 * grant.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KvBucket } from "@mesh/bus";
import { waitFor } from "@mesh/bus/testing";
import { Bucket, type ConfigRollout, type ConfigRolloutAction } from "@mesh/protocol";
import { T0 } from "./test-fleet.js";
import { assignerBus } from "./test-assigner.js";
import type { Behaviour, SimHosts } from "./test-sim-hosts.js";
import { NODES, fleetOnBuild1, killedAtWave2 } from "./test-waves.js";

const bus = assignerBus({ hosts: NODES });

/** Five nodes on build 1 of hello, healthy, greeting "Hello" mesh-wide; "Hi" requested in waves. */
async function fleetSaysHello() {
  const f = await fleetOnBuild1(bus, {
    record: recordOf,
    seed: async (operator) => {
      const config = await KvBucket.open(operator, Bucket.config);
      await config.put("hello.greeting", { value: "Hello", by: "ada", at: T0 });
    },
  });
  const requests = await KvBucket.open(f.operator, Bucket.configRollouts);
  await requests.put("hello.greeting", { value: "Hi", by: "ada", at: new Date().toISOString() });
  const config = await KvBucket.open(f.operator, Bucket.config);
  return { ...f, config, requests };
}

async function recordOf(): Promise<ConfigRollout | undefined> {
  const waves = await KvBucket.open(bus.admin, Bucket.configWaves);
  return (await waves.get("hello.greeting"))?.value;
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
    await using f = await fleetSaysHello();
    const { a, sim, config } = f;
    await a.until(async () => (await seeing(sim, "Hi")).length === 1, "the canary");
    assert.deepEqual(await seeing(sim, "Hi"), ["n1"]);
    const given: string[][] = [];
    for (let i = 0; i < 40; i++) {
      const r = await recordOf();
      if (r !== undefined && given.length < r.wave) given.push(r.waveNodes);
      if (r?.status === "done") break;
      // Unproven: given "Hi", and not yet reported seeing it for 20 s.
      const unproven: string[] = [];
      for (const n of await seeing(sim, "Hi")) if (sim.seenFor(n, "Hi") < 20) unproven.push(n);
      assert.ok(unproven.length <= 2, `more than a batch unproven: ${unproven.join(", ")}`);
      await f.step(5);
    }
    assert.deepEqual(given, [["n1"], ["n2", "n3"], ["n4", "n5"]]);
    assert.equal((await recordOf())?.status, "done");
    await a.until(
      async () => (await config.keys("hello.greeting.*")).length === 0,
      "the nodes' values gone",
    );
    assert.equal((await config.get("hello.greeting"))?.value.value, "Hi");
    assert.deepEqual(await seeing(sim, "Hi"), NODES);
  });

  it("a value the module refuses never goes beyond the canary; every node ends on the mesh-wide value, the halt said", async () => {
    await using f = await fleetSaysHello();
    const { a, sim, config } = f;
    await a.until(async () => (await seeing(sim, "Hi")).length === 1, "the canary");
    for (let i = 0; i < 10 && (await recordOf())?.status !== "failed"; i++) {
      assert.ok((await seeing(sim, "Hi")).length <= 1, "never beyond the canary");
      await f.step(5, refusesHi);
    }
    assert.equal((await recordOf())?.status, "failed");
    await a.until(async () => (await seeing(sim, "Hello")).length === 5, "every node on Hello");
    assert.equal((await config.get("hello.greeting"))?.value.value, "Hello");
    const said = await bus.lastCondition("config-rollout-failed-hello-greeting");
    assert.equal(said?.level, "error");
    assert.match(said?.message ?? "", /halted at wave 1 of 3: n1 \(exited with 1 at start\)/);
  });

  it("pause holds the next wave, resume gives it, abort takes the value back everywhere", async () => {
    await using f = await fleetSaysHello();
    const { a, sim, requests } = f;
    await a.until(async () => (await seeing(sim, "Hi")).length === 1, "the canary");
    await steer(requests, "pause");
    await a.until(async () => (await recordOf())?.status === "paused", "paused");
    for (let i = 0; i < 8; i++) await f.step(5);
    assert.deepEqual(await seeing(sim, "Hi"), ["n1"], "no wave while paused");
    await steer(requests, "resume");
    await a.until(async () => (await seeing(sim, "Hi")).length === 3, "the next wave on resume");
    await steer(requests, "abort");
    await a.until(async () => (await seeing(sim, "Hello")).length === 5, "every node back");
    assert.equal((await recordOf())?.status, "aborted");
  });

  it("an assigner killed (SIGKILL) mid config rollout and started again changes nothing, then goes on", async () => {
    await using f = await fleetSaysHello();
    await f.a.until(async () => (await seeing(f.sim, "Hi")).length === 1, "the canary");
    await killedAtWave2(bus, f, {
      record: recordOf,
      state: async () => ({
        record: await recordOf(),
        values: await Promise.all(NODES.map(async (n) => f.sim.greetingOn(n))),
      }),
      done: async () => {
        await waitFor(async () => (await f.config.keys("hello.greeting.*")).length === 0, {
          what: "the nodes' values gone",
          timeout: 60_000,
        });
        assert.deepEqual(await seeing(f.sim, "Hi"), NODES);
      },
    });
  });
});
