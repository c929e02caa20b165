/**
 * Kill anything, lose nothing (issue 15): the short seeded round of the fault suite that CI
 * runs (`npm run chaos` runs every fault). On a real demo mesh from `mesh up --demo`: kill -9 of
 * nats-server under a constant tool-call load, and kill -9 of the whole `mesh up` process group
 * followed by a new `mesh up` on the same root, twice. After each, every module is healthy,
 * hello answers, counter's state moves again (not merely "healthy" in status), no process runs
 * twice, and nothing the mesh holds changed or went back.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { freePort } from "@mesh/bus/testing";
import { FAULTS, runFault, type Fault, type FaultResult } from "../testing/chaos.js";
import { DemoMesh } from "../testing/demo-mesh.js";

let mesh: DemoMesh | undefined;
let root = "";

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mesh-survive-"));
  mesh = new DemoMesh({ root, port: await freePort(), node: "survive-1" });
  await mesh.up();
});

after(async () => {
  await mesh?.stop();
  await rm(root, { recursive: true, force: true });
});

function fault(name: string): Fault {
  const found = FAULTS.find((f) => f.name === name);
  assert.ok(found !== undefined, name);
  return found;
}

function assertWhole(result: FaultResult): void {
  assert.deepEqual(result.duplicates, {}, `${result.fault}: a process runs twice`);
  assert.deepEqual(result.changed, [], `${result.fault}: what the mesh holds changed`);
  assert.equal(result.lostWrites, 0, `${result.fault}: counter's kept total went back`);
  process.stdout.write(
    `# ${result.fault}: ${result.failedCalls} failed calls of ${result.failedCalls + result.answeredCalls}, ` +
      `whole again after ${result.backAfterMs} ms\n`,
  );
}

describe("kill anything, lose nothing", () => {
  test("kill -9 of nats-server: mesh up starts it again, nothing else stops, the tools answer and counter counts again", async () => {
    assert.ok(mesh !== undefined);
    const [bus] = await mesh.pidsOf("nats-server");
    const others = (await mesh.processes()).filter((p) => p.pid !== bus).map((p) => p.pid);
    const result = await runFault(mesh, fault("bus"));
    assertWhole(result);
    const still = new Set((await mesh.processes()).map((p) => p.pid));
    assert.deepEqual(
      others.filter((pid) => !still.has(pid)),
      [],
      "a process of the mesh ended because the bus went away",
    );
  });

  test("kill -9 of the whole mesh up group, twice, then mesh up again on the same root: every module healthy, tools answer, state moves, one copy of each", async () => {
    assert.ok(mesh !== undefined);
    for (let round = 1; round <= 2; round++) assertWhole(await runFault(mesh, fault("group")));
  });
});
