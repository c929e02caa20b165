/**
 * The standby with real processes, no bus: booted ahead, it says it is ready over its IPC channel
 * and takes over when told, with the unit's environment as it is now: at once after a crash, and
 * as the new process of a replacement whose environment alone moved (no process started). A
 * replacement that moves more than the environment starts a process, and ends the standby.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, rm } from "node:fs/promises";
import { DEFAULT_TAIL_LIMITS } from "./log-lines.js";
import { isAlive } from "./proc.js";
import { Supervisor, logFiles } from "./supervisor.js";
import { supervisedScript, waitFor } from "./test-support.js";

const roots: string[] = [];
after(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

/** A process that stands by as the runtime does, and says which VERSION it serves as. */
const SCRIPT = [
  `const serve = () => {`,
  `  console.log("serving " + process.pid + " as " + process.env.VERSION + " standby=" + (process.env.STANDBY ?? "-"));`,
  `  process.once("SIGUSR1", () => process.exit(1));`,
  `};`,
  `if (process.env.STANDBY === "1") {`,
  `  process.on("SIGUSR2", () => undefined);`,
  `  process.on("message", (m) => {`,
  `    if (m.t !== "serve") return;`,
  `    for (const name of m.env.unset) delete process.env[name];`,
  `    Object.assign(process.env, m.env.set);`,
  `    process.disconnect();`,
  `    serve();`,
  `  });`,
  `  console.log("standing by " + process.pid);`,
  `  process.send({ t: "standby-ready" });`,
  `} else serve();`,
  `setInterval(() => {}, 1 << 30);`,
].join("\n");

async function setUp(options: { standbyAfterMs: number }) {
  const { root, supervisor, spec, exits } = await supervisedScript(SCRIPT, {
    healthyMs: 200,
    graceMs: 1_000,
    standbyAfterMs: options.standbyAfterMs,
    spec: { env: { VERSION: "1" }, restartAtOnce: true, standby: { STANDBY: "1" } },
  });
  roots.push(root);
  const log = logFiles(root, spec).stdout;
  /** The pid of the n-th (1-based) standby that said it stands by. */
  const standby = (n: number): Promise<number> =>
    waitFor(`standby ${n}`, async () => {
      const all = [...(await readFile(log, "utf8")).matchAll(/standing by (\d+)/g)];
      return all.length >= n ? Number(all[n - 1]?.[1]) : undefined;
    });
  const said = (line: string): Promise<true> =>
    waitFor(`"${line}"`, async () => (await readFile(log, "utf8")).includes(line) || undefined);
  return { supervisor, spec, exits, standby, said, root };
}

/**
 * The fixture of every test here: SCRIPT supervised (setUp) and started, for the length of
 * `body`; then every process of the supervisor stopped, also when the body fails.
 */
async function withStarted(
  options: { standbyAfterMs: number },
  body: (it: Awaited<ReturnType<typeof setUp>>) => Promise<void>,
): Promise<void> {
  const it = await setUp(options);
  try {
    await it.supervisor.start(it.spec);
    await body(it);
  } finally {
    await it.supervisor.stopAll();
  }
}

test("a standby booted ahead takes over at once when the process exits after a healthy run", async () => {
  await withStarted({ standbyAfterMs: 50 }, async ({ supervisor, spec, exits, standby, said }) => {
    const first = supervisor.identity(spec.id);
    assert.ok(first !== undefined);
    const standbyPid = await standby(1);
    await new Promise((resolve) => setTimeout(resolve, 250)); // past healthyMs
    process.kill(first.pid, "SIGUSR1");
    await waitFor("the first exit", () => exits.length >= 1);
    const taken = await waitFor("the standby taking over", () => {
      const now = supervisor.identity(spec.id);
      return now !== undefined && now.pid !== first.pid ? now : undefined;
    });
    assert.equal(taken.pid, standbyPid, "the standby is the process now");
    await said(`serving ${standbyPid} as 1 standby=-`);
    assert.equal(exits[0]?.delayMs, 0);
  });
});

test("a replacement that moves only the environment is the standby taking it over, and the next standby boots at once", async () => {
  // Due 60 s after the start: the replacement boots it then and waits for it (it is ahead of a
  // start), and the next one boots once the handover is done, not 60 s later.
  await withStarted({ standbyAfterMs: 60_000 }, async ({ supervisor, spec, standby, said }) => {
    const first = supervisor.identity(spec.id);
    assert.ok(first !== undefined);
    let readyFor: number | undefined;
    const { retired } = await supervisor.replace(
      { ...spec, env: { VERSION: "2" } },
      async (identity) => {
        readyFor = identity.pid;
        await said(`serving ${identity.pid} as 2`);
      },
      5_000,
    );
    const standbyPid = await standby(1);
    assert.equal(readyFor, standbyPid, "no process was started: the standby is the new one");
    assert.equal(supervisor.identity(spec.id)?.pid, standbyPid);
    await said(`serving ${standbyPid} as 2 standby=-`);
    await retired;
    assert.equal(await isAlive(first), false, "the old process drained and exited");
    const next = await standby(2);
    assert.notEqual(next, standbyPid);
  });
});

test("a replacement that moves the command starts a process and ends the standby", async () => {
  await withStarted({ standbyAfterMs: 50 }, async ({ supervisor, spec, standby, said }) => {
    const standbyPid = await standby(1);
    await supervisor.replace(
      { ...spec, argv: [process.execPath, "--no-warnings", "main.cjs"], env: { VERSION: "3" } },
      async (identity) => {
        await said(`serving ${identity.pid} as 3 standby=-`);
      },
      5_000,
    );
    assert.notEqual(supervisor.identity(spec.id)?.pid, standbyPid);
    await waitFor("the old standby ended", async () => {
      const text = await readFile(`/proc/${standbyPid}/stat`, "utf8").catch(() => "");
      return text === "" || / Z /.test(text); // gone, or a zombie not yet reaped
    });
  });
});

test("a runtime adopted by a new host is backed by a standby of that host's", async () => {
  await withStarted(
    { standbyAfterMs: 60_000 },
    async ({ supervisor, spec, standby, said, root }) => {
      const next = new Supervisor({
        root,
        backoff: { initialMs: 100, maxMs: 10_000, jitter: 0 },
        healthyMs: 200,
        graceMs: 1_000,
        tail: DEFAULT_TAIL_LIMITS,
        pollMs: 50,
        standbyAfterMs: 50,
        onSpawned: () => undefined,
        onExit: () => undefined,
        onLine: () => undefined,
      });
      try {
        const first = supervisor.identity(spec.id);
        assert.ok(first !== undefined);
        await said(`serving ${first.pid} as 1`);
        await supervisor[Symbol.asyncDispose](); // the host goes; its process keeps running
        await next.adopt(spec, first);
        const standbyPid = await standby(1);
        await next.replace(
          { ...spec, env: { VERSION: "2" } },
          async () => {
            await said("as 2");
          },
          5_000,
        );
        assert.equal(next.identity(spec.id)?.pid, standbyPid, "the new host's standby took over");
      } finally {
        await next.stopAll();
      }
    },
  );
});
