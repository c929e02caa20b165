/**
 * `mesh conditions resolve <module> <name>` (issue 14.11): the built CLI on the operator's grant
 * against a real bus and controller (which says the resolution: the operator does not speak as
 * a module). A resolved condition replaces the open one, so status leaves it out; a name
 * the stream does not keep is refused with the names it keeps.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sayCondition } from "@mesh/bus";
import { ErrorCode, type Condition } from "@mesh/protocol";
import { startControllerMesh, type ControllerMesh } from "../../testing/controller-mesh.js";
import { runMesh, type MeshRun } from "../../testing/run-mesh.js";

const RUN_MS = 30_000;

describe("mesh conditions resolve", () => {
  let controllerMesh: ControllerMesh;

  before(async () => {
    controllerMesh = await startControllerMesh();
    const { admin } = controllerMesh;
    await sayCondition(admin, {
      module: "alpha",
      name: "disk-full",
      level: "warning",
      node: "n1",
      message: "the disk of n1 is full",
    });
    await sayCondition(admin, {
      module: "alpha",
      name: "slow",
      level: "warning",
      message: "alpha answers slowly",
    });
  });

  after(async () => {
    await controllerMesh?.[Symbol.asyncDispose]();
  });

  const mesh = (...args: string[]): Promise<MeshRun> =>
    runMesh([...args, "--credential", controllerMesh.credential], { deadlineMs: RUN_MS });
  const shown = async (...args: string[]): Promise<Condition[]> => {
    const run = await mesh(...args, "--json");
    assert.equal(run.code, 0, run.stderr);
    return (JSON.parse(run.stdout) as { conditions: Condition[] }).conditions;
  };

  test("a name the stream does not keep is refused (exit 3) with the names it keeps", async () => {
    const typo = await mesh("conditions", "resolve", "alpha", "disk-ful");
    assert.equal(typo.code, 3, typo.stderr);
    assert.match(typo.stderr, /did you mean "disk-full"/);
    assert.match(typo.stderr, /disk-full, slow/);
    const json = await mesh("conditions", "resolve", "nosuch", "disk-full", "--json");
    assert.equal(json.code, 3);
    const refusal = JSON.parse(json.stdout) as { ok: boolean; error: { code: string } };
    assert.deepEqual([refusal.ok, refusal.error.code], [false, ErrorCode.REFUSED]);
  });

  test("resolving replaces the open condition: status and --open leave it out, the list says resolved", async () => {
    const run = await mesh("conditions", "resolve", "alpha", "disk-full", "--json");
    assert.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as {
      ok: boolean;
      resolved: boolean;
      condition: Condition;
    };
    assert.equal(answer.resolved, true);
    assert.equal(answer.condition.resolved, true);
    assert.equal(answer.condition.node, "n1", "it stays about the node it was about");
    const status = await mesh("status", "--json");
    const report = JSON.parse(status.stdout) as { conditions: Condition[] };
    assert.deepEqual(
      report.conditions.map((c) => c.name),
      ["slow"],
    );
    assert.deepEqual(
      (await shown("conditions", "--open")).map((c) => c.name),
      ["slow"],
    );
    const all = await shown("conditions", "--module", "alpha");
    assert.equal(all.find((c) => c.name === "disk-full")?.resolved, true);
    const plain = await mesh("conditions");
    assert.match(plain.stdout, /disk-full +n1 +resolved/);
  });

  test("resolving a resolved condition changes nothing and says so", async () => {
    await mesh("conditions", "resolve", "alpha", "slow");
    const again = await mesh("conditions", "resolve", "alpha", "slow", "--json");
    assert.equal(again.code, 0, again.stderr);
    assert.equal((JSON.parse(again.stdout) as { resolved: boolean }).resolved, false);
    const plain = await mesh("conditions", "resolve", "alpha", "slow");
    assert.match(plain.stdout, /already resolved/);
  });
});
