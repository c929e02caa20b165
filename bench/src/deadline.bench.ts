/**
 * What the kit's one deadline costs (decision 0106): `withDeadline` around work that answers in
 * time, as every tool call in a module's worker now is, against the timer it replaced there (a
 * promise, `setTimeout`, `clearTimeout` at the answer), in alternating rounds of the same run; and
 * both against the time one tool call takes end to end (a runtime serving a module on one
 * nats-server, the same run).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withDeadline } from "@mesh/kit";
import { MeshBus, request } from "@mesh/bus";
import { credentialFor, startTestServer } from "@mesh/bus/testing";
import { RUNTIME_MODULE, toolSubject } from "@mesh/protocol";
import { ModuleState, Runtime } from "@mesh/runtime";
import { line, quantile, timeEach } from "./measure.js";

const ROUNDS = 7;
const DEADLINES = 200_000;
const CALLS = 2_000;
const SDK = import.meta.resolve("@mesh/sdk");
const MODULE = `
import { defineModule, defineTool, z } from "${SDK}";
export default defineModule({
  tools: [defineTool({ name: "echo", description: "Echoes n.", input: z.object({ n: z.number() }),
    handler: async ({ n }) => ({ n }) })],
});
`;

const expired = (): Error => new Error("expired");

/** The hand-written deadline a tool call had: a timer set, and cleared when the answer came. */
function timerAround<T>(work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(expired()), ms);
    void work.then((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

/** Microseconds per deadline, `DEADLINES` of them one after the other. */
async function perDeadline(around: (work: Promise<number>) => Promise<number>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < DEADLINES; i++) await around(Promise.resolve(i));
  return Number(process.hrtime.bigint() - start) / 1e3 / DEADLINES;
}

async function deadlines(): Promise<{ kit: number; timer: number }> {
  const kit: number[] = [];
  const timer: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    timer.push(await perDeadline((work) => timerAround(work, 60_000)));
    kit.push(await perDeadline((work) => withDeadline(() => work, { ms: 60_000, expired })));
  }
  return { kit: quantile(kit, 0.5), timer: quantile(timer, 0.5) };
}

/** One tool call's time, p50 of `CALLS` one after the other, in microseconds. */
async function oneCall(): Promise<number> {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-bench-deadline-"));
  const buses: MeshBus[] = [];
  let runtime: Runtime | undefined;
  try {
    const as = (module: string) => credentialFor(server, server.admin, { node: "n1", module });
    const caller = await MeshBus.connect(as("operator"));
    const served = await MeshBus.connect(as(RUNTIME_MODULE));
    buses.push(caller, served);
    const entry = join(dir, "echo", "tools.mjs");
    await mkdir(join(dir, "echo"), { recursive: true });
    await writeFile(entry, MODULE);
    let serving: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (serving = resolve));
    runtime = Runtime.create({
      bus: served,
      modules: new Map([["echo", [entry]]]),
      onStatus: (s) => s.modules["echo"]?.state === ModuleState.serving && serving(),
      log: () => undefined,
    });
    await ready;
    const subject = toolSubject("n1", "echo", "echo");
    for (let i = 0; i < 200; i++) await request(caller, subject, { n: i });
    const ms = await timeEach(CALLS, async (i) => void (await request(caller, subject, { n: i })));
    return quantile(ms, 0.5) * 1_000;
  } finally {
    await runtime?.stop();
    for (const bus of buses) await bus.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const { kit, timer } = await deadlines();
const call = await oneCall();
console.log(`a deadline met (${DEADLINES} one after the other; median of ${ROUNDS} rounds)`);
console.log(line("  withDeadline", kit, "µs", { what: "setTimeout + clearTimeout", value: timer }));
console.log(
  line("  withDeadline", kit, "µs", { what: `one tool call, p50 of ${CALLS}`, value: call }),
);
