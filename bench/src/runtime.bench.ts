/**
 * The tool runtime: calls through it against a bare NATS request-reply to a trivial responder
 * (same server, same client helpers, same run); a config change reaching a watching module's
 * code against the same bare round trip; a cold call (to an idle module, whose worker the call
 * starts); the memory of a runtime process serving 1, 10 and 50 modules, and of 50 modules
 * loaded then idle, against a bare Node process.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MeshBus, publish, request, serve, writeCredential, type Served } from "@mesh/bus";
import { credentialFor, startTestServer } from "@mesh/bus/testing";
import {
  Env,
  RUNTIME_MODULE,
  provisionChangedSubject,
  provisionSubject,
  toolSubject,
} from "@mesh/protocol";
import { ModuleState, Runtime, StatusEnv, type RuntimeStatus } from "@mesh/runtime";
import { line, quantile, throughput, timeEach } from "./measure.js";

const NODE = "bench";
const SEQUENTIAL = 2_000;
const CONCURRENT_TOTAL = 10_000;
const IN_FLIGHT = 64;
const CHANGES = 300;
const COLD = 40;
const BARE = "bench.bare";
const SDK = import.meta.resolve("@mesh/sdk");
const RUNTIME_MAIN = fileURLToPath(
  import.meta.resolve("@mesh/runtime").replace(/index\.js$/, "main.js"),
);

const MODULE = `
import { defineModule, defineTool, z } from "${SDK}";
export default defineModule({
  start: async (ctx) => {
    const watch = ctx.provision.watch("config", "greeting");
    void (async () => { for await (const item of watch) ctx.log.info("seen " + JSON.stringify(item)); })();
  },
  tools: [defineTool({ name: "echo", description: "Echoes n.", input: z.object({ n: z.number() }),
    handler: async ({ n }) => ({ n }) })],
});
`;

async function main(): Promise<void> {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-bench-runtime-"));
  try {
    const as = (module: string) => credentialFor(server, server.admin, { node: NODE, module });
    const caller = await MeshBus.connect(as("operator"));
    const responderBus = await MeshBus.connect(as("responder"));
    const runtimeBus = await MeshBus.connect(as(RUNTIME_MODULE));
    const stopBare = startBareResponder(responderBus);
    const provisioner = await startProvisioner(caller);
    const entry = join(dir, "echo", "tools.mjs");
    await mkdir(join(dir, "echo"), { recursive: true });
    await writeFile(entry, MODULE);
    const { runtime, seen } = await startRuntime(runtimeBus, entry);

    const calls = await warmCalls(caller);
    await sequentialCalls(calls);
    await callThroughput(calls);
    await configChanges(caller, provisioner, seen, calls);
    await runtime.stop();

    // A cold call: the module idle (its worker stopped, its service registered), then called.
    const coldTimes = await coldCalls(runtimeBus, caller, entry);
    console.log(`cold call: a call to an idle module, its worker started for it (${COLD} calls)`);
    console.log(line("  cold call p50", quantile(coldTimes, 0.5), "ms", calls.base(0.5)));
    console.log(line("  cold call p99", quantile(coldTimes, 0.99), "ms", calls.base(0.99)));
    stopBare.abort();

    const credential = join(dir, "runtime.json");
    await writeCredential(credential, as(RUNTIME_MODULE));
    await memory(dir, credential);

    await provisioner.served.stop();
    await caller.close();
    await responderBus.close();
    await runtimeBus.close();
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The baseline: a trivial responder over a plain subscription, until the controller aborts. */
function startBareResponder(bus: MeshBus): AbortController {
  const stop = new AbortController();
  const messages = bus.subscribe(BARE, { signal: stop.signal });
  void (async () => {
    for await (const m of messages) if (m.reply !== undefined) publish(bus, m.reply, m.json());
  })();
  return stop;
}

interface Provisioner {
  readonly served: Served;
  /** The one value that moves; the next ask answers it. */
  greeting: string;
}

/** A provisioner the runtime asks (what the host's client does), with one value that moves. */
async function startProvisioner(caller: MeshBus): Promise<Provisioner> {
  const state = { greeting: "v0" };
  const served = await serve(caller, {
    name: "bench-provisioner",
    version: "0.0.0",
    endpoints: [
      {
        name: "ask",
        subject: provisionSubject(NODE),
        handler: () => Promise.resolve({ value: state.greeting }),
      },
    ],
  });
  return Object.assign(state, { served });
}

/** A runtime serving the echo module; `seen` resolves when the module's code logs a value. */
async function startRuntime(
  bus: MeshBus,
  entry: string,
): Promise<{ runtime: Runtime; seen: Map<string, () => void> }> {
  const seen = new Map<string, () => void>();
  let serving: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (serving = resolve));
  const runtime = Runtime.create({
    bus,
    modules: new Map([["echo", [entry]]]),
    onStatus: (s) => s.modules["echo"]?.state === ModuleState.serving && serving(),
    log: (text) => {
      const match = /seen \{"value":"(v\d+)"\}/.exec(text);
      if (match?.[1] !== undefined) seen.get(match[1])?.();
    },
  });
  await ready;
  return { runtime, seen };
}

interface Calls {
  readonly bareCall: (n: number) => Promise<unknown>;
  readonly toolCall: (n: number) => Promise<unknown>;
  /** The bare request-reply's q-quantile, measured by sequentialCalls. */
  base: (q: number) => { what: string; value: number };
}

/** The two call paths, warmed (JIT, connections, the worker). */
async function warmCalls(caller: MeshBus): Promise<Calls> {
  const tool = toolSubject(NODE, "echo", "echo");
  const bareCall = (n: number) => request(caller, BARE, { n });
  const toolCall = (n: number) => request(caller, tool, { n });
  for (let i = 0; i < 300; i++) {
    await bareCall(i);
    await toolCall(i);
  }
  return { bareCall, toolCall, base: () => ({ what: "bare request-reply", value: Number.NaN }) };
}

async function sequentialCalls(calls: Calls): Promise<void> {
  const bareTimes = await timeEach(SEQUENTIAL, (i) => calls.bareCall(i).then(() => undefined));
  const toolTimes = await timeEach(SEQUENTIAL, (i) => calls.toolCall(i).then(() => undefined));
  calls.base = (q) => ({ what: "bare request-reply", value: quantile(bareTimes, q) });
  console.log(`sequential calls (${SEQUENTIAL} each)`);
  console.log(line("  tool call p50", quantile(toolTimes, 0.5), "ms", calls.base(0.5)));
  console.log(line("  tool call p99", quantile(toolTimes, 0.99), "ms", calls.base(0.99)));
}

async function callThroughput(calls: Calls): Promise<void> {
  const bareRate = await throughput(calls.bareCall, CONCURRENT_TOTAL, IN_FLIGHT);
  const toolRate = await throughput(calls.toolCall, CONCURRENT_TOTAL, IN_FLIGHT);
  console.log(`throughput (${CONCURRENT_TOTAL} calls, ${IN_FLIGHT} in flight)`);
  console.log(
    line("  tool calls", toolRate, "calls/s", { what: "bare request-reply", value: bareRate }),
  );
}

/**
 * A config change: the client says it moved; the runtime asks again as the module and hands
 * the new value to the module's watch; the module's code logs it (one port hop back, included).
 */
async function configChanges(
  caller: MeshBus,
  provisioner: Provisioner,
  seen: Map<string, () => void>,
  calls: Calls,
): Promise<void> {
  const changeTimes: number[] = [];
  for (let i = 1; i <= CHANGES; i++) {
    const value = `v${i}`;
    const arrived = new Promise<void>((resolve) => seen.set(value, resolve));
    const start = process.hrtime.bigint();
    provisioner.greeting = value;
    publish(caller, provisionChangedSubject(NODE), {
      module: "echo",
      kind: "config",
      key: "greeting",
    });
    await arrived;
    changeTimes.push(Number(process.hrtime.bigint() - start) / 1e6);
    seen.delete(value);
  }
  console.log(`config change to a watching module's code (${CHANGES} changes)`);
  console.log(line("  change p50", quantile(changeTimes, 0.5), "ms", calls.base(0.5)));
  console.log(line("  change p99", quantile(changeTimes, 0.99), "ms", calls.base(0.99)));
}

/** Memory: the runtime as a process, serving n modules (each its own worker). */
async function memory(dir: string, credential: string): Promise<void> {
  const bareRss = await rssOf(["-e", "setInterval(() => {}, 1000)"], {}, undefined);
  const baseline = { what: "bare node process", value: bareRss / 1024 / 1024 };
  console.log("memory (RSS once every module serves)");
  for (const count of [1, 10, 50]) {
    const entries: string[] = [];
    for (let i = 0; i < count; i++) {
      const module = `m${i}`;
      await mkdir(join(dir, "mem", module), { recursive: true });
      const file = join(dir, "mem", module, "tools.mjs");
      await writeFile(file, MODULE);
      entries.push(`${module}=${file}`);
    }
    const statusFile = join(dir, `status-${count}.json`);
    const env = {
      [Env.toolModules]: entries.sort().join(","),
      [Env.brokerFile]: credential,
      [StatusEnv]: statusFile,
    };
    const rss = await rssOf([RUNTIME_MAIN], env, statusFile, ModuleState.serving);
    console.log(line(`  runtime serving ${count} module(s)`, rss / 1024 / 1024, "MiB", baseline));
    if (count !== 50) continue;
    const idle = await rssOf(
      [RUNTIME_MAIN],
      { ...env, MESH_RUNTIME_IDLE_MS: "2000" },
      statusFile,
      ModuleState.idle,
    );
    console.log(
      line(`  runtime, ${count} modules loaded then idle`, idle / 1024 / 1024, "MiB", baseline),
    );
  }
}

/**
 * Starts `node args`, waits until its status file says every module is in `state` (or, without
 * one, a moment to settle), reads its RSS from /proc, and stops it.
 */
async function rssOf(
  args: readonly string[],
  env: Record<string, string>,
  statusFile: string | undefined,
  state: ModuleState = ModuleState.serving,
): Promise<number> {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: "ignore",
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    for (let waited = 0; ; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (waited > 180_000) throw new Error(`${args.join(" ")} did not settle within 180 s`);
      if (statusFile === undefined) {
        if (waited >= 500) break;
        continue;
      }
      try {
        const status = JSON.parse(await readFile(statusFile, "utf8")) as RuntimeStatus;
        const modules = Object.values(status.modules);
        if (modules.length > 0 && modules.every((m) => m.state === state)) break;
      } catch {
        // not written yet
      }
    }
    // Let the workers' start-up garbage be collected as it would be in service.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const text = await readFile(`/proc/${child.pid}/status`, "utf8");
    const kb = Number(/VmRSS:\s+(\d+)/.exec(text)?.[1] ?? Number.NaN);
    return kb * 1024;
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

/** Times calls to a module that is idle each time: its worker is started by the call. */
async function coldCalls(runtimeBus: MeshBus, caller: MeshBus, entry: string): Promise<number[]> {
  let waiting: { state: ModuleState; resolve: () => void } | undefined;
  const runtime = Runtime.create({
    bus: runtimeBus,
    modules: new Map([["echo", [entry]]]),
    tuning: { idleMs: 100 },
    onStatus: (s) => {
      if (waiting !== undefined && s.modules["echo"]?.state === waiting.state) waiting.resolve();
    },
    log: () => undefined,
  });
  const until = (state: ModuleState): Promise<void> =>
    runtime.module("echo")?.status.state === state
      ? Promise.resolve()
      : new Promise((resolve) => (waiting = { state, resolve }));
  try {
    await until(ModuleState.serving);
    const tool = toolSubject(NODE, "echo", "echo");
    const times: number[] = [];
    for (let i = 0; i < COLD; i++) {
      await until(ModuleState.idle);
      // Idle for 10 minutes by default: by then the spare worker has long booted.
      while (!runtime.spareReady) await new Promise((resolve) => setTimeout(resolve, 5));
      const start = process.hrtime.bigint();
      await request(caller, tool, { n: i });
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    return times;
  } finally {
    await runtime.stop();
  }
}

await main();
