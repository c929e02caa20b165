/**
 * What counting a tool's calls costs (decision 0172): tool call throughput through a runtime
 * that counts and files its windows every 5 s, against the same runtime with counting off
 * (`toolStatsMs: 0`), both serving the same module on one server in the same run, measured in
 * alternating rounds so that the machine's noise falls on both; and one count alone, against
 * the time one call takes with counting off.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MeshBus, ensureLayout, request } from "@mesh/bus";
import { credentialFor, startTestServer } from "@mesh/bus/testing";
import { RUNTIME_MODULE, toolSubject } from "@mesh/protocol";
import { ModuleState, Runtime, ToolStatsCounter } from "@mesh/runtime";
import { line, quantile, throughput } from "./measure.js";

const ROUNDS = 7;
const COUNTS = 1_000_000;
const CALLS = 5_000;
const IN_FLIGHT = 64;
const SDK = import.meta.resolve("@mesh/sdk");
const MODULE = `
import { defineModule, defineTool, z } from "${SDK}";
export default defineModule({
  tools: [defineTool({ name: "echo", description: "Echoes n.", input: z.object({ n: z.number() }),
    handler: async ({ n }) => ({ n }) })],
});
`;

async function main(): Promise<void> {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-bench-tool-stats-"));
  const buses: MeshBus[] = [];
  const runtimes: Runtime[] = [];
  try {
    const as = (node: string, module: string) =>
      credentialFor(server, server.admin, { node, module });
    const caller = await MeshBus.connect(as("bench", "operator"));
    buses.push(caller);
    await ensureLayout(caller);
    const entry = join(dir, "echo", "tools.mjs");
    await mkdir(join(dir, "echo"), { recursive: true });
    await writeFile(entry, MODULE);
    const start = async (node: string, toolStatsMs?: number) => {
      const bus = await MeshBus.connect(as(node, RUNTIME_MODULE));
      buses.push(bus);
      let serving: () => void = () => undefined;
      const ready = new Promise<void>((resolve) => (serving = resolve));
      const runtime = Runtime.create({
        bus,
        modules: new Map([["echo", [entry]]]),
        onStatus: (s) => s.modules["echo"]?.state === ModuleState.serving && serving(),
        log: () => undefined,
        ...(toolStatsMs === undefined ? {} : { toolStatsMs }),
      });
      runtimes.push(runtime);
      await ready;
      const subject = toolSubject(node, "echo", "echo");
      return (n: number) => request(caller, subject, { n });
    };
    const counted = await start("counted");
    const uncounted = await start("uncounted", 0);
    for (let i = 0; i < 500; i++) {
      await counted(i);
      await uncounted(i);
    }
    const on: number[] = [];
    const off: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      off.push(await throughput(uncounted, CALLS, IN_FLIGHT));
      on.push(await throughput(counted, CALLS, IN_FLIGHT));
    }
    console.log(
      `tool call throughput (${CALLS} calls, ${IN_FLIGHT} in flight; median of ${ROUNDS})`,
    );
    console.log(
      line("  counting on", quantile(on, 0.5), "calls/s", {
        what: "counting off",
        value: quantile(off, 0.5),
      }),
    );
    await oneCount(caller, 1000 / quantile(off, 0.5));
  } finally {
    for (const runtime of runtimes) await runtime.stop();
    for (const bus of buses) await bus.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** What `count` costs a call, timed over many (three tools, one in four an error). */
async function oneCount(bus: MeshBus, callMs: number): Promise<void> {
  // Filed every hour: the timing is of counting, not of publishing.
  const counter = new ToolStatsCounter({
    bus,
    node: "bench",
    intervalMs: 3_600_000,
    log: () => undefined,
  });
  const tools = ["a", "b", "c"];
  const start = process.hrtime.bigint();
  for (let i = 0; i < COUNTS; i++) {
    counter.count("echo", tools[i % 3] ?? "a", i % 4 === 0 ? "INTERNAL" : undefined);
  }
  const ms = Number(process.hrtime.bigint() - start) / 1e6 / COUNTS;
  await counter.stop();
  console.log(`one count (${COUNTS} counted)`);
  console.log(line("  count", ms, "ms", { what: "one call, counting off", value: callMs }));
}

await main();
