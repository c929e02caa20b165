/**
 * Issue 15: processes a test starts do not outlive it. A test process that started a mesh (with
 * `startMeshUp`, and with `DemoMesh`, whose `mesh up` runs in a group of its own) is killed with
 * SIGKILL, so no after() of its runs: every process of that mesh — `mesh up`, nats-server, the
 * mesh's daemons, the host and the processes it runs — is gone soon after, by pid and start time.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  processesNaming,
  scratchFolders,
  startHoldingParent,
  startTimeOf,
} from "@mesh/bus/testing";
import { until } from "../testing/until.js";

const TESTING = new URL("../testing/", import.meta.url).href;
const BUS_TESTING = new URL("../../../bus/dist/testing/index.js", import.meta.url).href;
const scratch = scratchFolders({ after });

/** Runs `body` (module code that starts a mesh on `root`) in a parent, then SIGKILLs the parent. */
async function killParentOf(body: string): Promise<void> {
  const dir = await scratch("mesh-reap-");
  const root = join(dir, "root");
  const { parent, output } = await startHoldingParent(
    dir,
    [`const root = ${JSON.stringify(root)};`, body, `process.stdout.write("up\\n");`],
    { stderr: "collect" },
  );
  try {
    await until(
      () => Promise.resolve(output().includes("up\n") ? true : undefined),
      150_000,
      `the parent's mesh up`,
    );
  } catch (error) {
    parent.kill("SIGKILL");
    throw new Error(`${(error as Error).message}: ${output()}`);
  }
  const left = (await processesNaming(root)).map((pid) => ({ pid, startTime: startTimeOf(pid) }));
  assert.ok(left.length >= 4, `the mesh's processes run: ${JSON.stringify(left)}`);
  parent.kill("SIGKILL");
  try {
    await until(
      () =>
        Promise.resolve(left.every((p) => startTimeOf(p.pid) !== p.startTime) ? true : undefined),
      60_000,
      "every process of the killed parent's mesh to be gone",
    );
  } finally {
    for (const p of left) if (startTimeOf(p.pid) === p.startTime) process.kill(p.pid, "SIGKILL");
  }
  assert.deepEqual(await processesNaming(root), [], "nothing names the root any more");
}

describe("a test process killed with SIGKILL leaves nothing of the mesh it started (issue 15)", () => {
  test("a mesh from startMeshUp (mesh up in the test's own group): every process of it is gone", async () => {
    await killParentOf(
      [
        `const { startMeshUp } = await import(${JSON.stringify(`${TESTING}mesh-up.js`)});`,
        `await startMeshUp({ root, node: "reap-1" });`,
      ].join("\n"),
    );
  });

  test("a demo mesh (mesh up in a group of its own, modules in theirs): every process of it is gone", async () => {
    await killParentOf(
      [
        `const { DemoMesh } = await import(${JSON.stringify(`${TESTING}demo-mesh.js`)});`,
        `const { freePort } = await import(${JSON.stringify(BUS_TESTING)});`,
        `await new DemoMesh({ root, port: await freePort(), node: "reap-2" }).up();`,
      ].join("\n"),
    );
  });
});
