/**
 * The reaper: what a test process started ends with it, also when it is killed with SIGKILL and
 * no hook of its runs (issue 15).
 */
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { after, test } from "node:test";
import { waitFor } from "./wait-for.js";
import { startTimeOf } from "./proc-stat.js";
import { scratchFolders } from "./fixtures.js";
import { startHoldingParent } from "./holding-parent.js";

const HARNESS = new URL("./index.js", import.meta.url).href;
const scratch = scratchFolders({ after });

test("a test process killed with SIGKILL takes the nats-servers it started with it, and the reaper ends", async () => {
  const { parent, output } = await startHoldingParent(
    await scratch("mesh-reaper-"),
    [
      `import { reaperPid, startTestServer, startTestCluster } from ${JSON.stringify(HARNESS)};`,
      `const one = await startTestServer();`,
      `const cluster = await startTestCluster({ size: 3 });`,
      `const pids = [one.pid, ...[0, 1, 2].map((i) => cluster.server(i).pid)];`,
      `process.stdout.write(JSON.stringify({ pids, reaper: reaperPid() }) + "\\n");`,
    ],
    { stderr: "inherit" },
  );
  let seen: { pids: number[]; reaper: number } | undefined;
  try {
    await waitFor(
      () => {
        if (!output().includes("\n")) return false;
        seen = JSON.parse(output()) as { pids: number[]; reaper: number };
        return true;
      },
      { timeout: 120_000, what: "the parent's servers up" },
    );
  } catch (error) {
    parent.kill("SIGKILL");
    throw error;
  }
  const { pids, reaper } = seen as { pids: number[]; reaper: number };
  assert.equal(pids.length, 4);
  const running = [...pids, reaper].map((pid) => ({ pid, startTime: startTimeOf(pid) }));
  assert.ok(
    running.every((p) => p.startTime !== undefined),
    "all running before the kill",
  );
  parent.kill("SIGKILL");
  await waitFor(() => running.every((p) => startTimeOf(p.pid) !== p.startTime), {
    timeout: 60_000,
    what: "every server and the reaper gone",
  });
});

test("a test process killed with SIGKILL takes its network namespaces with it (by their prefix)", async () => {
  if (process.getuid?.() !== 0) {
    throw new Error(
      "this test makes network namespaces, which only root can: run it as root (CI does)",
    );
  }
  const prefix = `mreap${process.pid}-`;
  const { parent, output } = await startHoldingParent(
    await scratch("mesh-reaper-ns-"),
    [
      `import { execFileSync } from "node:child_process";`,
      `import { reapNetnsWithMe } from ${JSON.stringify(HARNESS)};`,
      `for (const n of ["a", "hub"]) execFileSync("ip", ["netns", "add", ${JSON.stringify(prefix)} + n]);`,
      `reapNetnsWithMe(${JSON.stringify(prefix)});`,
      `process.stdout.write("made\\n");`,
    ],
    { stderr: "inherit" },
  );
  const held = () =>
    readdir("/run/netns").then((names) => names.filter((n) => n.startsWith(prefix)));
  try {
    await waitFor(() => output().includes("made"), {
      timeout: 60_000,
      what: "the parent's namespaces",
    });
    assert.equal((await held()).length, 2, "both namespaces are there before the kill");
  } finally {
    parent.kill("SIGKILL");
  }
  await waitFor(async () => (await held()).length === 0, {
    timeout: 60_000,
    what: "the reaper to delete the namespaces",
  });
});
