/**
 * The reaper: what a test process started ends with it, also when it is killed with SIGKILL and
 * no hook of its runs (issue 15).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { waitFor } from "./wait-for.js";
import { startTimeOf } from "./proc-stat.js";

const HARNESS = new URL("./index.js", import.meta.url).href;
const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

test("a test process killed with SIGKILL takes the nats-servers it started with it, and the reaper ends", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mesh-reaper-"));
  dirs.push(dir);
  const script = join(dir, "parent.mjs");
  await writeFile(
    script,
    [
      `import { reaperPid, startTestServer, startTestCluster } from ${JSON.stringify(HARNESS)};`,
      `const one = await startTestServer();`,
      `const cluster = await startTestCluster({ size: 3 });`,
      `const pids = [one.pid, ...[0, 1, 2].map((i) => cluster.server(i).pid)];`,
      `process.stdout.write(JSON.stringify({ pids, reaper: reaperPid() }) + "\\n");`,
      `setInterval(() => undefined, 1 << 30);`,
    ].join("\n"),
  );
  const parent = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  parent.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  let seen: { pids: number[]; reaper: number } | undefined;
  try {
    await waitFor(
      () => {
        if (!out.includes("\n")) return false;
        seen = JSON.parse(out) as { pids: number[]; reaper: number };
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
  const dir = await mkdtemp(join(tmpdir(), "mesh-reaper-ns-"));
  dirs.push(dir);
  const prefix = `mreap${process.pid}-`;
  const script = join(dir, "parent.mjs");
  await writeFile(
    script,
    [
      `import { execFileSync } from "node:child_process";`,
      `import { reapNetnsWithMe } from ${JSON.stringify(HARNESS)};`,
      `for (const n of ["a", "hub"]) execFileSync("ip", ["netns", "add", ${JSON.stringify(prefix)} + n]);`,
      `reapNetnsWithMe(${JSON.stringify(prefix)});`,
      `process.stdout.write("made\\n");`,
      `setInterval(() => undefined, 1 << 30);`,
    ].join("\n"),
  );
  const parent = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  parent.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const held = () =>
    readdir("/run/netns").then((names) => names.filter((n) => n.startsWith(prefix)));
  try {
    await waitFor(() => out.includes("made"), { timeout: 60_000, what: "the parent's namespaces" });
    assert.equal((await held()).length, 2, "both namespaces are there before the kill");
  } finally {
    parent.kill("SIGKILL");
  }
  await waitFor(async () => (await held()).length === 0, {
    timeout: 60_000,
    what: "the reaper to delete the namespaces",
  });
});
