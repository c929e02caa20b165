/**
 * Kill anything, lose nothing (issue 15), on a real demo mesh from `mesh up --demo`: kill -9 of
 * nats-server under a constant tool-call load, and kill -9 of the whole `mesh up` process group
 * followed by a new `mesh up` on the same root. After each, every tool answers again, counter's
 * state moves again (not merely "healthy" in status), and no module process runs twice.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus, request } from "@mesh/bus";
import { deadline, freePort } from "@mesh/bus/testing";
import { Bucket, Env, nodeModuleKey, toolSubject } from "@mesh/protocol";
import { MESH_MAIN } from "../testing/run-mesh.js";

const NODE = "survive-1";
/** Generous: a loaded machine restarts slowly; the figures that matter are printed. */
const BACK_MS = 90_000;

let root: string;
let port: number;
let up: Running | undefined;
let operator: MeshBus | undefined;

interface Report {
  bus: { url: string; pid: number };
  processes: Record<string, number>;
  credentials: { operator: string };
}

interface Running {
  readonly child: ChildProcess;
  readonly report: Promise<Report>;
  readonly exit: Promise<number | null>;
}

/** `mesh up --demo --json` in a process group of its own, so the whole group can be killed. */
function startUp(): Running {
  const child = spawn(
    process.execPath,
    [MESH_MAIN, "up", "--demo", "--json", "--root", root, "--port", String(port), "--node", NODE],
    {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: { ...process.env, [Env.credential]: "" },
    },
  );
  let out = "";
  let err = "";
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.stderr?.on("data", (chunk: Buffer) => (err = (err + chunk.toString()).slice(-20_000)));
  const report = new Promise<Report>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      try {
        resolve(JSON.parse(out) as Report);
      } catch {
        // not the whole document yet
      }
    });
    void exit.then((code) => reject(new Error(`mesh up exited ${String(code)}: ${out}${err}`)));
  });
  return { child, report, exit };
}

/** Calls hello's greet once; true when it answered. */
async function greet(bus: MeshBus): Promise<boolean> {
  try {
    const reply = (await request(
      bus,
      toolSubject(NODE, "hello", "greet"),
      { name: "Ada" },
      {
        timeoutMs: 2_000,
      },
    )) as { text?: string };
    return typeof reply.text === "string";
  } catch {
    return false;
  }
}

/** A caller that calls hello's tool one call after another until stopped, counting failures. */
function constantLoad(bus: MeshBus) {
  let failed = 0;
  let answered = 0;
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      if (await greet(bus)) answered += 1;
      else {
        failed += 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  })();
  return {
    get failed() {
      return failed;
    },
    get answered() {
      return answered;
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}

async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  return deadline(
    (async () => {
      for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })(),
    ms,
    what,
  );
}

async function counterTotal(bus: MeshBus): Promise<number | undefined> {
  try {
    const reply = (await request(
      bus,
      toolSubject(NODE, "counter", "read"),
      {},
      {
        timeoutMs: 2_000,
      },
    )) as { total?: number };
    return reply.total;
  } catch {
    return undefined;
  }
}

/** Waits until counter's total has moved past `from`: its daemon writes and its tool reads. */
async function counterMoves(bus: MeshBus, what: string): Promise<void> {
  const from = await until(() => counterTotal(bus), BACK_MS, `counter to answer ${what}`);
  await until(
    async () => ((await counterTotal(bus)) ?? from) > from || undefined,
    BACK_MS,
    `counter's total to move ${what}`,
  );
}

async function healthy(bus: MeshBus, modules: readonly string[]): Promise<boolean> {
  const have = await KvBucket.open(bus, Bucket.have);
  for (const module of modules) {
    const entry = await have.get(nodeModuleKey(NODE, module)).catch(() => undefined);
    if (entry?.value.health !== "healthy") return false;
  }
  return true;
}

/** The environment of every process that names our root, by pid. */
async function processesOfRoot(): Promise<Map<number, string>> {
  const found = new Map<number, string>();
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    const env = await readFile(`/proc/${entry}/environ`, "utf8").catch(() => "");
    if (cmdline.includes(root) || env.includes(root)) found.set(Number(entry), env);
  }
  return found;
}

/** How many runtimes and counter daemons run for our root: one each, never two. */
async function copies(): Promise<{ runtimes: number; counters: number }> {
  let runtimes = 0;
  let counters = 0;
  for (const env of (await processesOfRoot()).values()) {
    const vars = env.split("\0");
    if (vars.some((v) => v.startsWith(`${Env.toolModules}=`))) runtimes += 1;
    else if (vars.some((v) => v.startsWith(`${Env.brokerFile}=`) && v.includes("counter")))
      counters += 1;
  }
  return { runtimes, counters };
}

async function connectOperator(report: Report): Promise<MeshBus> {
  return MeshBus.connectWithFile(report.credentials.operator, { say: () => undefined });
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mesh-survive-"));
  port = await freePort();
  up = startUp();
  operator = await connectOperator(await deadline(up.report, 300_000, "mesh up --demo"));
});

after(async () => {
  await operator?.close();
  if (up?.child.pid !== undefined) {
    try {
      process.kill(-up.child.pid, "SIGINT");
    } catch {
      // gone already
    }
    await deadline(up.exit, 60_000, "mesh up to stop").catch(() => undefined);
  }
  for (const pid of (await processesOfRoot()).keys()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  await rm(root, { recursive: true, force: true });
});

describe("kill anything, lose nothing", () => {
  test("kill -9 of nats-server: mesh up starts it again, nothing else stops, the tools answer and counter counts again", async () => {
    assert.ok(up !== undefined && operator !== undefined);
    const report = await up.report;
    const load = constantLoad(operator);
    await until(
      () => Promise.resolve(load.answered > 3 || undefined),
      BACK_MS,
      "calls before the fault",
    );
    const before = await processesOfRoot();
    process.kill(report.bus.pid, "SIGKILL");
    const killedAt = Date.now();
    const answeredAtKill = load.answered;
    await until(
      () => Promise.resolve(load.answered > answeredAtKill + 3 || undefined),
      BACK_MS,
      "hello to answer after the bus came back",
    );
    const backAfterMs = Date.now() - killedAt;
    await load.stop();
    await counterMoves(operator, "after the bus came back");
    // The mesh's processes and the modules' processes kept running through the outage.
    const after = await processesOfRoot();
    const survivors = [...before.keys()].filter((pid) => pid !== report.bus.pid && after.has(pid));
    assert.deepEqual(
      survivors.sort(),
      [...before.keys()].filter((pid) => pid !== report.bus.pid).sort(),
      "a process of the mesh ended because the bus went away",
    );
    assert.deepEqual(await copies(), { runtimes: 1, counters: 1 });
    process.stdout.write(
      `# bus kill: ${load.failed} failed calls, hello answering again after ${backAfterMs} ms\n`,
    );
  });

  test("kill -9 of the whole mesh up group, twice, then mesh up again on the same root: every module healthy, tools answer, state moves, one copy of each", async () => {
    for (let round = 1; round <= 2; round++) {
      assert.ok(up?.child.pid !== undefined);
      await operator?.close();
      operator = undefined;
      process.kill(-up.child.pid, "SIGKILL");
      await up.exit;
      const killedAt = Date.now();
      up = startUp();
      const report = await deadline(up.report, 300_000, `mesh up again (round ${round})`);
      operator = await connectOperator(report);
      const bus = operator;
      await until(
        async () => (await greet(bus)) || undefined,
        BACK_MS,
        `hello to answer (round ${round})`,
      );
      await until(
        async () => (await healthy(bus, ["node-tools", "hello", "counter", "board"])) || undefined,
        BACK_MS,
        `every module healthy (round ${round})`,
      );
      const backAfterMs = Date.now() - killedAt;
      await counterMoves(bus, `after the group kill (round ${round})`);
      const board = (await request(
        bus,
        toolSubject(NODE, "board", "show"),
        {},
        {
          timeoutMs: 5_000,
        },
      )) as { total: number };
      assert.ok(board.total > 0, "board reads counter's state again");
      assert.deepEqual(await copies(), { runtimes: 1, counters: 1 }, `round ${round}`);
      process.stdout.write(`# group kill round ${round}: healthy again after ${backAfterMs} ms\n`);
    }
  });
});
