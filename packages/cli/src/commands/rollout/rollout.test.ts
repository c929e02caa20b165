/**
 * `mesh rollout` as an operator runs it (issue 22): the built CLI as a child process on the
 * operator's grant, against a real bus whose rollout record the admin wrote as the assigner would.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus } from "@mesh/bus";
import { Bucket, Principal, type Rollout } from "@mesh/protocol";
import { resolveRolloutPolicy } from "@mesh/core";
import { canaryRollout } from "@mesh/core/testing";
import { ROLLOUTS_URI, listResources, readResource } from "../../mcp/resources.js";
import { operatorBusSuite } from "../../testing/operator-bus.js";
import { policyOf } from "./rollout.js";

const record: Rollout = {
  ...canaryRollout,
  // The operator's policy, which changed nothing, on five nodes: a canary of 1, batches of 2.
  policy: resolveRolloutPolicy({ nodes: 5, override: {} }),
};

const bus = operatorBusSuite({ name: "rollout" }, { before, after });

describe("mesh rollout (issue 22)", () => {
  test("set writes the operator's policy, merged over what stood; get shows it", async () => {
    await bus.text(["rollout", "set", "hello", "--canary", "2", "--batch", "25%"]);
    await bus.text(["rollout", "set", "hello", "--min-healthy", "1m", "--order", "label=arch"]);
    const got = await bus.json<{ override: Record<string, unknown> }>([
      "rollout",
      "get",
      "hello",
      "--json",
    ]);
    assert.deepEqual(got.override, {
      canary: 2,
      batch: "25%",
      "min-healthy": "1m",
      order: "label=arch",
    });
    await bus.text(["rollout", "set", "hello", "--clear"]);
    const cleared = await bus.json<{ override: unknown }>(["rollout", "get", "hello", "--json"]);
    assert.equal(cleared.override, null);
  });

  test("a bad value is refused, naming the field and the rule", () => {
    assert.throws(() => policyOf({ batch: "150%" }), /batch.*percentage from 0% to 100%/s);
    assert.throws(() => policyOf({ minHealthy: "30 seconds" }), /min-healthy.*ms, s, m or h/s);
    assert.throws(() => policyOf({ order: "fastest" }), /order is "name", "random"/);
  });

  test("pause, resume, promote, abort write the operator's word on the build rolling out", async () => {
    await (await KvBucket.open(bus.admin, Bucket.rollouts)).put("hello", record);
    const steers = await KvBucket.open(bus.admin, Bucket.rolloutSteers);
    for (const action of ["pause", "resume", "promote", "abort"] as const) {
      await bus.text(["rollout", action, "hello"]);
      const steer = (await steers.get("hello"))?.value;
      assert.equal(steer?.action, action);
      assert.equal(steer?.build, "2-b");
    }
    const refused = await bus.run(["rollout", "retry", "hello", "--json"]);
    assert.notEqual(refused.code, 0, "a rolling rollout has nothing to retry");
    assert.match(refused.stdout + refused.stderr, /CONFLICT/);
  });

  test("retry on a halted rollout names its attempt and lifts the failed marks of every node", async () => {
    await (
      await KvBucket.open(bus.admin, Bucket.rollouts)
    ).put("hello", {
      ...record,
      status: "failed",
      failed: { reason: "n1: exited with 1", nodes: [{ node: "n1", error: "exited with 1" }] },
    });
    await bus.text(["rollout", "retry", "hello"]);
    const steer = (await (await KvBucket.open(bus.admin, Bucket.rolloutSteers)).get("hello"))
      ?.value;
    assert.equal(steer?.action, "retry");
    assert.equal(steer?.attempt, 1);
    assert.ok(await (await KvBucket.open(bus.admin, Bucket.retries)).get("all.hello"));
  });

  test("status lists each rollout with its counts and what it waits for", async () => {
    await (await KvBucket.open(bus.admin, Bucket.rollouts)).put("hello", record);
    const text = await bus.text(["rollout", "status"]);
    assert.match(text, /hello build 2-b: rolling, wave 1 of 3/);
    assert.match(text, /waits for: wave 1 of 3 \(n1\)/);
    // The MCP door lists and reads the same, on the operator's credential.
    await using operator = await MeshBus.connect(bus.loginOf(Principal.operator));
    assert.ok(listResources([]).some((r) => r.uri === ROLLOUTS_URI));
    const read = await readResource(operator, [], ROLLOUTS_URI);
    const doc = JSON.parse(read.text) as { rollouts: Array<{ module: string; wave: number }> };
    assert.deepEqual(
      doc.rollouts.map((r) => [r.module, r.wave]),
      [["hello", 1]],
    );
    const none = await bus.run(["rollout", "pause", "other", "--json"]);
    assert.match(none.stdout + none.stderr, /NOT_FOUND/);
  });

  test("status --json counts the nodes and says the canary's health; mesh status has a rollouts section", async () => {
    await (await KvBucket.open(bus.admin, Bucket.rollouts)).put("hello", record);
    await (
      await KvBucket.open(bus.admin, Bucket.wants)
    ).put("n1.hello", {
      build: "2-b",
      manifestDigest: "d".repeat(64),
      fingerprint: "f".repeat(16),
      rule: "waves",
      reason: "the canary",
    });
    await (
      await KvBucket.open(bus.admin, Bucket.have)
    ).put("n1.hello", {
      build: "2-b",
      fingerprint: "f".repeat(16),
      health: "healthy",
      since: record.waveAt,
      restarts: 0,
    });
    const got = await bus.json<{ rollouts: Array<Record<string, unknown>> }>([
      "rollout",
      "status",
      "hello",
      "--json",
    ]);
    assert.deepEqual(
      got.rollouts.map((r) => [r["module"], r["wave"], r["healthy"], r["canary"], r["waitsFor"]]),
      [["hello", 1, 1, { node: "n1", health: "healthy" }, record.waiting]],
    );
    const status = await bus.run(["status"]);
    assert.match(
      status.stdout,
      /^rollouts:\n {2}hello build 2-b: rolling, wave 1 of 3; 1 healthy/m,
    );
    assert.match(status.stdout, /canary n1 healthy/);
    const json = await bus.json<{ rollouts: Array<{ module: string }> }>(["status", "--json"]);
    assert.deepEqual(
      json.rollouts.map((r) => r.module),
      ["hello"],
    );
  });
});
