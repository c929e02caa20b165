import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RolloutPolicy } from "@mesh/protocol";
import { assign } from "./assign.js";
import {
  KEY,
  configFleet,
  configRecord,
  prepareConfig,
  request,
  seeing,
  steerConfig,
  stepConfig,
  valueOn,
  type ConfigBehaviour,
  type ConfigFleet,
} from "./config-fleet.js";
import { pass } from "./fixtures.js";

/** Canary 1, then batches of 2, each proven by 20 s of health. */
const POLICY: RolloutPolicy = {
  canary: 1,
  batch: 2,
  "min-healthy": "20s",
  "healthy-deadline": "2m",
};

/** Steps until the rollout ends; the waves given, in order. */
function roll(f: ConfigFleet, behaviour?: ConfigBehaviour, seconds = 5, most = 100): string[][] {
  const waves: string[][] = [];
  for (let i = 0; i < most; i++) {
    stepConfig(f, seconds, behaviour);
    const r = configRecord(f);
    if (r !== undefined && waves.length < r.wave) waves.push(r.waveNodes);
    if (r !== undefined && r.status !== "rolling" && r.status !== "paused") break;
  }
  return waves;
}

/** Nodes whose host says its module saw "Hi" (the node's own value) less than 20 s ago. */
function unproven(f: ConfigFleet): string[] {
  return f.nodes.filter((n) => {
    const have = f.s.have.get(`${n}.hello`)?.current;
    return (
      valueOn(f, n) === "Hi" &&
      f.s.own.config.has(`${KEY}.${n}`) &&
      (have?.config === undefined || Date.parse(f.s.now) - Date.parse(have.config.since) < 20_000)
    );
  });
}

const breaksOn =
  (bad: unknown): ConfigBehaviour =>
  (_n, value) =>
    value === bad ? "failing" : "healthy";

describe("config rollout: a value in waves (issue 22 item 4, decision 0131)", () => {
  it("a good value goes canary → batches → all, then is the mesh-wide value; never more than a batch unproven", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    const waves: string[][] = [];
    for (let i = 0; i < 60 && configRecord(f)?.status !== "done"; i++) {
      stepConfig(f, 5);
      const r = configRecord(f);
      if (r !== undefined && waves.length < r.wave) waves.push(r.waveNodes);
      assert.ok(unproven(f).length <= 2, `more than a batch unproven: ${unproven(f).join(", ")}`);
      assert.deepEqual(assign(f.s).writes, [], "a rerun writes nothing");
    }
    assert.deepEqual(waves, [["n1"], ["n2", "n3"], ["n4", "n5"]]);
    assert.equal(configRecord(f)?.status, "done");
    assert.deepEqual(f.s.own.config.get(KEY)?.value, "Hi", "the mesh-wide value now");
    assert.deepEqual(
      [...f.s.own.config.keys()].filter((k) => k.startsWith(`${KEY}.`)),
      [],
      "the node values written for it are gone",
    );
    assert.deepEqual(seeing(f, "Hi"), f.nodes);
    stepConfig(f, 60);
    assert.deepEqual(assign(f.s).writes, [], "a done rollout writes nothing more");
  });

  it("the first wave is the canary alone; the others keep the value they run, with the wave they wait for", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    stepConfig(f, 5);
    assert.deepEqual(seeing(f, "Hi"), ["n1"]);
    const r = configRecord(f);
    assert.equal(r?.wave, 1);
    assert.equal(r?.waves, 3);
    assert.match(r?.waiting ?? "", /wave 1 of 3 \(n1\): each runs greeting="Hi" healthy for 20s/);
  });

  it("a gate holds only once a heartbeat comes min-healthy after the node saw the value", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    stepConfig(f, 5); // the canary is given it
    stepConfig(f, 5); // n1 sees it
    stepConfig(f, 15);
    assert.deepEqual(seeing(f, "Hi"), ["n1"], "15 s is not 20 s");
    stepConfig(f, 5);
    assert.deepEqual(seeing(f, "Hi"), ["n1", "n2", "n3"]);
  });

  it("a value that breaks the module never leaves the canary, and every node ends on the mesh-wide value", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    roll(f, breaksOn("Hi"));
    const r = configRecord(f);
    assert.equal(r?.status, "failed");
    assert.equal(r?.wave, 1);
    assert.deepEqual(r?.failed?.nodes, [{ node: "n1", error: "greeting refused" }]);
    assert.deepEqual(seeing(f, "Hello"), f.nodes, "every node back on the mesh-wide value");
    assert.equal(f.s.own.config.get(KEY)?.value, "Hello", "the mesh-wide value is untouched");
    assert.deepEqual(assign(f.s).writes, [], "a halted rollout writes nothing more");
  });

  it("the halt's condition names the value, the node, its error and how to try again", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    stepConfig(f, 5);
    const r = stepConfig(f, 5, breaksOn("Hi"));
    const said = r.conditions.find((c) => c.name === "config-rollout-failed-hello-greeting");
    assert.equal(said?.level, "error");
    assert.match(
      said?.message ?? "",
      /greeting="Hi" halted at wave 1 of 3: n1 \(greeting refused\)/,
    );
    assert.match(said?.message ?? "", /mesh config set hello greeting <value> --rollout/);
  });

  it("a value failing after 40 s is stopped at its batch, and every node given it goes back in one pass", () => {
    const f = configFleet(5, { ...POLICY, "min-healthy": "60s" });
    request(f, "Hi");
    const late: ConfigBehaviour = (n, value, seconds) =>
      n === "n2" && value === "Hi" && seconds >= 40 ? "failing" : "healthy";
    let given = 0;
    for (let i = 0; i < 60 && configRecord(f)?.status !== "failed"; i++) {
      given = seeing(f, "Hi").length;
      stepConfig(f, 5, late);
    }
    const r = configRecord(f);
    assert.equal(r?.status, "failed");
    assert.equal(r?.wave, 2, "stopped at n2's batch");
    assert.equal(given, 3, "the canary and the batch had it");
    assert.deepEqual(seeing(f, "Hello"), f.nodes, "all three back in the pass that halted");
  });

  it("a node not seeing the value within the deadline halts the rollout", () => {
    const f = configFleet(5, { ...POLICY, "healthy-deadline": "30s" });
    request(f, "Hi");
    roll(f, (_n, value) => (value === "Hi" ? "starting" : "healthy"));
    const r = configRecord(f);
    assert.equal(r?.status, "failed");
    assert.match(r?.failed?.reason ?? "", /n1: not healthy on the value within 30s/);
  });

  it("pause holds the next wave, resume gives it, promote skips the gates, abort takes the value back", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    stepConfig(f, 5);
    steerConfig(f, "pause");
    for (let i = 0; i < 10; i++) stepConfig(f, 5);
    assert.equal(configRecord(f)?.status, "paused");
    assert.match(configRecord(f)?.waiting ?? "", /mesh rollout resume hello --config greeting/);
    assert.deepEqual(seeing(f, "Hi"), ["n1"]);
    steerConfig(f, "resume");
    stepConfig(f, 5);
    assert.deepEqual(seeing(f, "Hi"), ["n1", "n2", "n3"]);
    steerConfig(f, "promote");
    stepConfig(f, 5);
    assert.deepEqual(seeing(f, "Hi"), f.nodes);
    steerConfig(f, "abort");
    stepConfig(f, 5);
    assert.equal(configRecord(f)?.status, "aborted");
    assert.deepEqual(seeing(f, "Hello"), f.nodes);
  });

  it("a node with its operator's own value keeps it and is not waited for", () => {
    const f = configFleet(3, POLICY);
    f.s.own.config.set(`${KEY}.n1`, { value: "Ahoy", by: "ada", at: f.s.now });
    request(f, "Hi");
    roll(f);
    assert.equal(configRecord(f)?.status, "done");
    assert.equal(valueOn(f, "n1"), "Ahoy");
    assert.deepEqual(configRecord(f)?.admitted, ["n2", "n3"]);
  });

  it("a node that runs nothing of the module has nothing to lose: admitted at once", () => {
    const f = configFleet(5, POLICY);
    f.s.have.delete("n5.hello");
    request(f, "Hi");
    pass(f.s);
    assert.deepEqual(configRecord(f)?.admitted, ["n1", "n5"]);
  });

  it("a restart mid-rollout (the same buckets, nothing held in memory) neither restarts nor advances it", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    for (let i = 0; i < 8 && configRecord(f)?.wave !== 2; i++) stepConfig(f, 5);
    assert.equal(configRecord(f)?.wave, 2);
    prepareConfig(f, 1);
    const first = assign(f.s);
    const again = assign(f.s);
    assert.deepEqual(first.writes, again.writes, "the same snapshot decides the same");
  });

  it("a new request while one rolls starts again from the canary", () => {
    const f = configFleet(5, POLICY);
    request(f, "Hi");
    for (let i = 0; i < 8 && configRecord(f)?.wave !== 2; i++) stepConfig(f, 5);
    request(f, "Hey");
    stepConfig(f, 5);
    const r = configRecord(f);
    assert.equal(r?.value, "Hey");
    assert.equal(r?.wave, 1);
    assert.deepEqual(seeing(f, "Hey"), ["n1"]);
  });
});
