/**
 * The supervisor with real processes, no bus: the backoff starts again after a healthy run, and
 * a stop reaches the whole process group, with KILL for what ignores TERM.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { watch } from "node:fs";
import { mkdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_TAIL_LIMITS } from "./log-lines.js";
import { isAlive, startTimeOf } from "./proc.js";
import { Supervisor, logFiles } from "./supervisor.js";
import { supervisedScript, waitFor } from "./test-support.js";

const roots: string[] = [];
after(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

async function setUp(
  script: string,
  options: { healthyMs: number; graceMs: number; standbyAfterMs?: number },
) {
  const set = await supervisedScript(script, options);
  roots.push(set.root);
  return set;
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
    `process.on("SIGTERM", () => { console.log("draining " + process.pid); setTimeout(() => process.exit(0), 300); });`,
    `console.log("up " + process.pid);`,
    `setInterval(() => {}, 1 << 30);`,
  ].join("\n");
  const { root, supervisor, spec, exits } = await setUp(script, { healthyMs: 200, graceMs: 5_000 });
  const log = logFiles(root, spec).stdout;
  try {
    await supervisor.start(spec);
    const old = supervisor.identity(spec.id);
    assert.ok(old !== undefined);
    await waitFor("the old one up", async () =>
      (await readFile(log, "utf8")).includes(`up ${old.pid}`),
    );
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

test("the log limit holds under a writer as fast as it can write: neither the file nor .1 is ever over the limit (issue 15)", async () => {
  const LIMIT = 1024 * 1024;
  const TOTAL = 64 * 1024 * 1024;
  // 64 MiB in 64 KiB writes as fast as the pipe takes them, yielding once a MiB (a busy logger,
  // not one write call), then a marker file and an idle wait.
  const script = [
    `const fs = require("node:fs");`,
    `const line = Buffer.from("x".repeat(1023) + "\\n");`,
    `const chunk = Buffer.concat(Array.from({ length: 64 }, () => line));`,
    `(async () => {`,
    `  const started = Date.now();`,
    `  for (let n = 0; n < ${TOTAL} / chunk.length; n++) {`,
    `    fs.writeSync(1, chunk);`,
    `    if (n % 16 === 15) await new Promise((r) => setImmediate(r));`,
    `  }`,
    `  fs.writeSync(1, "the end\\n");`,
    `  fs.writeFileSync("written", String(Date.now() - started));`,
    `  setInterval(() => {}, 1 << 30);`,
    `})();`,
  ].join("\n");
  const { root, supervisor, spec } = await setUp(script, { healthyMs: 200, graceMs: 500 });
  const files = logFiles(root, spec);
  const lines: string[] = [];
  const tailed = new Supervisor({
    root,
    backoff: { initialMs: 100, maxMs: 10_000 },
    healthyMs: 200,
    graceMs: 500,
    tail: { ...DEFAULT_TAIL_LIMITS, maxFileBytes: LIMIT },
    pollMs: 250,
    onSpawned: () => undefined,
    onExit: () => undefined,
    onLine: (_m, _p, _s, line) => lines.push(line),
  });
  await supervisor[Symbol.asyncDispose]();
  // Every size either file is seen with, on every change inotify reports and every 5 ms.
  const sizes = { file: 0, rotated: 0, looks: 0 };
  const sample = async (): Promise<void> => {
    const [a, b] = await Promise.all([
      stat(files.stdout).catch(() => undefined),
      stat(`${files.stdout}.1`).catch(() => undefined),
    ]);
    sizes.looks += 1;
    sizes.file = Math.max(sizes.file, a?.size ?? 0);
    sizes.rotated = Math.max(sizes.rotated, b?.size ?? 0);
  };
  await mkdir(files.folder, { recursive: true });
  const sampler = setInterval(() => void sample(), 5);
  const watcher = watch(files.folder, () => void sample());
  try {
    await tailed.start(spec);
    await waitFor(
      "the writer done",
      async () => (await readFile(join(spec.cwd, "written"), "utf8").catch(() => "")) !== "",
      120_000,
    );
    await waitFor("its last line kept", async () =>
      (await readFile(files.stdout, "utf8")).endsWith("the end\n"),
    );
    await sample();
    const [file, rotated] = await Promise.all([stat(files.stdout), stat(`${files.stdout}.1`)]);
    const ms = await readFile(join(spec.cwd, "written"), "utf8");
    console.log(
      `fast writer: ${TOTAL} bytes written in ${ms} ms; largest file seen ${sizes.file}, largest .1 seen ${sizes.rotated}, limit ${LIMIT}, ${sizes.looks} looks`,
    );
    assert.ok(sizes.file <= LIMIT, `the file was seen with ${sizes.file} bytes`);
    assert.ok(sizes.rotated <= LIMIT, `.1 was seen with ${sizes.rotated} bytes`);
    assert.ok(file.size <= LIMIT && rotated.size <= LIMIT);
    // What is kept is the newest output: .1 filled to the limit, the file ending with the last line.
    assert.equal(rotated.size, LIMIT, ".1 was filled to the limit");
    await waitFor("the line cap to say what it dropped", () =>
      lines.some((l) => /line\(s\) dropped/.test(l)),
    );
  } finally {
    clearInterval(sampler);
    watcher.close();
    await tailed.stopAll();
  }
});
