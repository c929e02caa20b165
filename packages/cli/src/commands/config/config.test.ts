/**
 * `mesh config set|get|unset` as an operator runs them: the built CLI with the operator's grant
 * against a real bus where hello is registered and its manifest (two declared keys) is known.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { resolveRolloutPolicy } from "@mesh/core";
import { Bucket } from "@mesh/protocol";
import { startControllerMesh, type ControllerMesh } from "../../testing/controller-mesh.js";
import { helloManifest, seedWanted } from "../../testing/fixtures.js";
import { type MeshRun } from "../../testing/run-mesh.js";

const json = <T>(run: MeshRun): T => {
  assert.equal(run.code, 0, run.stderr + run.stdout);
  return JSON.parse(run.stdout) as T;
};

const errorCode = (run: MeshRun): string =>
  (JSON.parse(run.stdout) as { error: { code: string } }).error.code;

describe("mesh config", () => {
  let mesh: ControllerMesh;
  let admin: ControllerMesh["admin"];

  before(async () => {
    mesh = await startControllerMesh();
    admin = mesh.admin;
    const hello = helloManifest({
      config: {
        greeting: { description: "how to greet", default: "Hello" },
        times: { type: "integer", minimum: 1, maximum: 10, default: 1 },
      },
    });
    await mesh.register("hello");
    await seedWanted(mesh.put, hello, {
      nodes: ["n1"],
      build: "2-b",
      reason: "newest for the test",
    });
  });

  after(async () => {
    await mesh?.[Symbol.asyncDispose]();
  });

  test("config set takes JSON or a bare string, per node too; get shows defaults and values; unset removes", async () => {
    const bare = json<{ value: unknown; asString: boolean; key: string }>(
      await mesh.run(["config", "set", "hello", "greeting", "Hi there", "--json"]),
    );
    assert.deepEqual([bare.key, bare.value, bare.asString], ["hello.greeting", "Hi there", true]);
    const typed = json<{ value: unknown; key: string }>(
      await mesh.run(["config", "set", "hello", "times", "3", "--node", "n1", "--json"]),
    );
    assert.deepEqual([typed.key, typed.value], ["hello.times.n1", 3]);
    const stored = await (await KvBucket.open(admin, Bucket.config)).get("hello.times.n1");
    assert.equal(stored?.value.value, 3);
    assert.equal(stored?.value.by, "hub.operator");

    const got = json<{
      manifestKnown: boolean;
      keys: Array<{
        key: string;
        declared: boolean;
        default?: unknown;
        value?: { value: unknown };
        nodes: Record<string, { value: unknown }>;
      }>;
    }>(await mesh.run(["config", "get", "hello", "--json"]));
    assert.equal(got.manifestKnown, true);
    assert.deepEqual(
      got.keys.map((k) => [k.key, k.declared, k.default, k.value?.value, k.nodes["n1"]?.value]),
      [
        ["greeting", true, "Hello", "Hi there", undefined],
        ["times", true, 1, undefined, 3],
      ],
    );
    const plain = await mesh.run(["config", "get", "hello", "times"]);
    assert.match(plain.stdout, /default\s+1/);
    assert.match(plain.stdout, /on n1\s+3/);

    const unset = json<{ removed: boolean }>(
      await mesh.run(["config", "unset", "hello", "times", "--node", "n1", "--json"]),
    );
    assert.equal(unset.removed, true);
    assert.equal(
      await (await KvBucket.open(admin, Bucket.config)).get("hello.times.n1"),
      undefined,
    );
  });

  test("config set of a value that breaks the key's declared type is REFUSED naming the rule (exit 3), unless --force", async () => {
    const notANumber = await mesh.run(["config", "set", "hello", "times", "lots", "--json"]);
    assert.equal(notANumber.code, 3);
    assert.equal(errorCode(notANumber), "REFUSED");
    const message = (JSON.parse(notANumber.stdout) as { error: { message: string } }).error.message;
    assert.match(message, /"lots" is a string, not an integer \(the rule type: "integer"\)/);
    const tooMany = await mesh.run(["config", "set", "hello", "times", "11"]);
    assert.equal(tooMany.code, 3);
    assert.match(tooMany.stderr, /11 is more than 10 \(the rule maximum: 10\)/);
    const config = await KvBucket.open(admin, Bucket.config);
    assert.equal(await config.get("hello.times"), undefined, "a refused value is not written");
    const shown = await mesh.run(["config", "get", "hello", "times"]);
    assert.match(shown.stdout, /rules\s+type: "integer", minimum: 1, maximum: 10/);
    const forced = await mesh.run(["config", "set", "hello", "times", "11", "--force"]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((await config.get("hello.times"))?.value.value, 11);
    await config.delete("hello.times");
  });

  test("config set of an undeclared key is REFUSED naming the declared keys (exit 3), unless --force", async () => {
    const refused = await mesh.run(["config", "set", "hello", "colour", "red", "--json"]);
    assert.equal(refused.code, 3);
    assert.equal(errorCode(refused), "REFUSED");
    const message = (JSON.parse(refused.stdout) as { error: { message: string } }).error.message;
    assert.match(message, /greeting, times/);
    const plain = await mesh.run(["config", "set", "hello", "colour", "red"]);
    assert.equal(plain.code, 3);
    assert.match(plain.stderr, /REFUSED/);
    const forced = await mesh.run(["config", "set", "hello", "colour", "red", "--force"]);
    assert.equal(forced.code, 0, forced.stderr);
    const badName = await mesh.run(["config", "set", "hello", "Bad.Key", "1", "--json"]);
    assert.equal(badName.code, 2);
    assert.equal(errorCode(badName), "INVALID_NAME");
  });
});

describe("mesh config set --rollout (issue 22 item 4, decision 0131)", () => {
  let mesh: ControllerMesh;

  before(async () => {
    mesh = await startControllerMesh();
    await mesh.register("hello");
    await seedWanted(
      mesh.put,
      helloManifest({ config: { greeting: { description: "how to greet", default: "Hello" } } }),
      { nodes: ["n1"], build: "2-b", reason: "newest for the test" },
    );
  });

  after(async () => {
    await mesh?.[Symbol.asyncDispose]();
  });

  test("writes the request, not the value; --node and an undeclared key are refused", async () => {
    const set = json<{ key: string; value: unknown; rollout: boolean }>(
      await mesh.run(["config", "set", "hello", "greeting", "Hi", "--rollout", "--json"]),
    );
    assert.deepEqual([set.key, set.value, set.rollout], ["hello.greeting", "Hi", true]);
    const requests = await KvBucket.open(mesh.admin, Bucket.configRollouts);
    assert.equal((await requests.get("hello.greeting"))?.value.value, "Hi");
    const config = await KvBucket.open(mesh.admin, Bucket.config);
    assert.equal(await config.get("hello.greeting"), undefined, "the assigner moves it, in waves");
    const node = await mesh.run([
      "config",
      "set",
      "hello",
      "greeting",
      "Hi",
      "--rollout",
      "--node",
      "n1",
      "--json",
    ]);
    assert.equal(node.code, 2, node.stdout);
    assert.equal(errorCode(node), "USAGE");
    const undeclared = await mesh.run([
      "config",
      "set",
      "hello",
      "colour",
      "red",
      "--rollout",
      "--force",
      "--json",
    ]);
    assert.equal(errorCode(undeclared), "REFUSED");
    assert.match(undeclared.stdout, /does not declare colour/);
  });

  test("mesh rollout pause|abort --config steer the request; retry is a new request; status lists it", async () => {
    await mesh.run(["config", "set", "hello", "greeting", "Hey", "--rollout", "--json"]);
    const requests = await KvBucket.open(mesh.admin, Bucket.configRollouts);
    const request = (await requests.get("hello.greeting"))?.value;
    assert.ok(request !== undefined);
    const waves = await KvBucket.open(mesh.admin, Bucket.configWaves);
    // The assigner's record, as its first pass writes it (decision 0131).
    await waves.put("hello.greeting", {
      module: "hello",
      key: "greeting",
      value: "Hey",
      fingerprint: "f".repeat(64),
      request: request.at,
      by: request.by,
      status: "rolling",
      wave: 1,
      waves: 3,
      admitted: ["n1"],
      waveNodes: ["n1"],
      waveAt: request.at,
      policy: resolveRolloutPolicy({ nodes: 3 }),
      waiting: 'wave 1 of 3 (n1): each runs greeting="Hey" healthy for 30s',
    });
    json(await mesh.run(["rollout", "pause", "hello", "--config", "greeting", "--json"]));
    assert.equal((await requests.get("hello.greeting"))?.value.steer?.action, "pause");
    const retry = await mesh.run(["rollout", "retry", "hello", "--config", "greeting", "--json"]);
    assert.equal(errorCode(retry), "USAGE");
    const status = json<{ configRollouts: { key: string; status: string; wave: number }[] }>(
      await mesh.run(["rollout", "status", "hello", "--json"]),
    );
    assert.deepEqual(
      status.configRollouts.map((r) => [r.key, r.status, r.wave]),
      [["greeting", "rolling", 1]],
    );
    const text = await mesh.run(["rollout", "status", "hello"]);
    assert.match(text.stdout, /hello config greeting="Hey": rolling, wave 1 of 3/);
    json(await mesh.run(["rollout", "abort", "hello", "--config", "greeting", "--json"]));
    assert.equal((await requests.get("hello.greeting"))?.value.steer?.action, "abort");
  });
});
