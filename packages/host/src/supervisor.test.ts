/**
 * The supervisor with real processes, no bus: the backoff starts again after a healthy run, and
 * a stop reaches the whole process group, with KILL for what ignores TERM.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_TAIL_LIMITS } from "./log-tail.js";
import { isAlive, startTimeOf } from "./proc.js";
import { Supervisor, logFiles, type ExitInfo, type ProcessSpec } from "./supervisor.js";
import { tempRoot, waitFor } from "./test-support.js";

const roots: string[] = [];
after(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

async function setUp(script: string, options: { healthyMs: number; graceMs: number }) {
  const root = await tempRoot();
  roots.push(root);
  const cwd = join(root, "bundle");
  await mkdir(cwd, { recursive: true });
  await writeFile(join(cwd, "main.cjs"), script);
  const exits: ExitInfo[] = [];
  const supervisor = new Supervisor({
    root,
    backoff: { initialMs: 100, maxMs: 10_000 },
    healthyMs: options.healthyMs,
    graceMs: options.graceMs,
    tail: DEFAULT_TAIL_LIMITS,
    pollMs: 50,
    onSpawned: () => undefined,
    onExit: (_id, exit) => exits.push(exit),
    onLine: () => undefined,
  });
  const spec: ProcessSpec = {
    id: "t.process-p",
    module: "t",
    name: "p",
    argv: [process.execPath, "main.cjs"],
    env: {},
    cwd,
    marker: { name: "MESH_HOST_PROCESS", value: "test:t.process-p" },
  };
  return { root, supervisor, spec, exits };
}

test("a process that exits after a healthy run is restarted after the first delay again", async () => {
  const { supervisor, spec, exits } = await setUp("setTimeout(() => process.exit(1), 400);", {
    healthyMs: 200,
    graceMs: 1_000,
  });
  try {
    await supervisor.start(spec);
    await waitFor("three exits", () => exits.length >= 3);
    assert.deepEqual(
      exits.slice(0, 3).map((e) => e.delayMs),
      [100, 100, 100],
    );
  } finally {
    await supervisor.stopAll();
  }
});

test("a stop sends TERM to the group, and KILL after the grace to what ignores it, children too", async () => {
  const script = [
    `process.on("SIGTERM", () => console.log("ignoring TERM"));`,
    `const c = require("node:child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1 << 30)"], { stdio: "ignore" });`,
    `console.log("child " + c.pid);`,
    `setInterval(() => {}, 1 << 30);`,
  ].join("\n");
  const { root, supervisor, spec } = await setUp(script, { healthyMs: 200, graceMs: 500 });
  const log = logFiles(root, spec).stdout;
  try {
    await supervisor.start(spec);
    const leader = supervisor.identity(spec.id);
    assert.ok(leader !== undefined);
    const childPid = await waitFor("the child", async () => {
      const m = /child (\d+)/.exec(await readFile(log, "utf8"));
      return m === null ? undefined : Number(m[1]);
    });
    const child = { pid: childPid, startTime: (await startTimeOf(childPid)) ?? "?" };
    await supervisor.stop(spec.id);
    assert.equal(await isAlive(leader), false);
    await waitFor("the child gone", async () => !(await isAlive(child)), 10_000);
    assert.match(await readFile(log, "utf8"), /ignoring TERM/);
    assert.equal(supervisor.status(spec.id), undefined);
  } finally {
    await supervisor.stopAll();
  }
});

test("a replacement starts beside the old process, which gets TERM only once the new one is ready", async () => {
  const script = [
    `console.log("up " + process.pid);`,
    `process.on("SIGTERM", () => { console.log("draining " + process.pid); setTimeout(() => process.exit(0), 300); });`,
    `setInterval(() => {}, 1 << 30);`,
  ].join("\n");
  const { root, supervisor, spec, exits } = await setUp(script, { healthyMs: 200, graceMs: 5_000 });
  const log = logFiles(root, spec).stdout;
  try {
    await supervisor.start(spec);
    const old = supervisor.identity(spec.id);
    assert.ok(old !== undefined);
    let oldAliveWhileWaiting = false;
    const { retired } = await supervisor.replace(
      spec,
      async (fresh) => {
        await waitFor("the new one up", async () =>
          (await readFile(log, "utf8")).includes(`up ${fresh.pid}`),
        );
        oldAliveWhileWaiting = await isAlive(old);
        assert.equal(supervisor.retiring(spec.id)?.pid, old.pid);
      },
      5_000,
    );
    assert.ok(oldAliveWhileWaiting, "both ran at once");
    await retired;
    assert.equal(await isAlive(old), false);
    assert.match(await readFile(log, "utf8"), new RegExp(`draining ${old.pid}`));
    const fresh = supervisor.identity(spec.id);
    assert.ok(fresh !== undefined && fresh.pid !== old.pid && (await isAlive(fresh)));
    assert.equal(supervisor.retiring(spec.id), undefined);
    assert.deepEqual(exits, [], "the old one's exit is not a crash to restart");
  } finally {
    await supervisor.stopAll();
  }
});

test("a process that asks to restart at once does so after a healthy run", async () => {
  const { supervisor, spec, exits } = await setUp("setTimeout(() => process.exit(1), 400);", {
    healthyMs: 200,
    graceMs: 1_000,
  });
  try {
    await supervisor.start({ ...spec, restartAtOnce: true });
    await waitFor("two exits", () => exits.length >= 2);
    assert.deepEqual(
      exits.slice(0, 2).map((e) => e.delayMs),
      [0, 0],
    );
  } finally {
    await supervisor.stopAll();
  }
});
