/**
 * From `mesh assign` to the module's tool answering: a whole mesh (`mesh up` on a temporary
 * root), hello registered and built once, then repeated cycles of unassign (until the tool no
 * longer answers) and assign (timed until it answers again). Beside it, in the same run, the time
 * of a bare `node -e 0` process start: the floor any delivery that starts a process stands on.
 *
 *   npm run build && npm run bench -- assign
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus, request } from "@mesh/bus";
import { freePort } from "@mesh/bus/testing";
import { Bucket, targetModuleKey, toolSubject } from "@mesh/protocol";
import { line, quantile, timeEach } from "./measure.js";

const CLI = fileURLToPath(new URL("../../packages/cli/dist/main.js", import.meta.url));
const HELLO = fileURLToPath(new URL("../../examples/modules/hello", import.meta.url));
const NODE = "bench-1";
const CYCLES = Number(process.env["BENCH_CYCLES"] ?? 8);

async function answers(bus: MeshBus): Promise<boolean> {
  try {
    await request(
      bus,
      toolSubject(NODE, "hello", "greet"),
      { name: "bench" },
      { timeoutMs: 1_000 },
    );
    return true;
  } catch {
    return false;
  }
}

async function waitFor(test: () => Promise<boolean>, limitMs: number, what: string): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await test())) {
    if (Date.now() > end) throw new Error(`${what} did not happen within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const root = await mkdtemp(join(tmpdir(), "mesh-bench-assign-"));
const port = await freePort();
const up = spawn(
  process.execPath,
  [CLI, "up", "--root", root, "--node", NODE, "--port", String(port), "--json"],
  {
    stdio: ["ignore", "pipe", "inherit"],
  },
);
try {
  const report = await new Promise<{ credentials: { operator: string } }>((resolve, reject) => {
    let out = "";
    up.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      try {
        resolve(JSON.parse(out) as { credentials: { operator: string } });
      } catch {
        // not yet whole
      }
    });
    up.once("exit", (code) => reject(new Error(`mesh up exited ${String(code)}`)));
  });
  const bus = await MeshBus.connectWithFile(report.credentials.operator);
  const add = spawnSync(process.execPath, [CLI, "module", "add", HELLO, "--root", root, "--wait"], {
    stdio: "inherit",
  });
  if (add.status !== 0) throw new Error("mesh module add hello failed");
  const assignments = await KvBucket.open(bus, Bucket.assignments);
  const key = targetModuleKey({ node: NODE }, "hello");
  const assign = () => assignments.put(key, { by: "bench", at: new Date().toISOString() });
  await assign();
  await waitFor(() => answers(bus), 300_000, "hello's first answer");

  // One cycle: unassign, wait until the tool is gone, then assign and time until it answers.
  const cycle = async (): Promise<number> => {
    await assignments.delete(key);
    await waitFor(async () => !(await answers(bus)), 120_000, "hello to stop answering");
    const start = process.hrtime.bigint();
    await assign();
    await waitFor(() => answers(bus), 120_000, "hello to answer again");
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  await cycle(); // warm-up
  const toAnswer: number[] = [];
  for (let i = 0; i < CYCLES; i++) toAnswer.push(await cycle());
  const bare = await timeEach(CYCLES, () => {
    spawnSync(process.execPath, ["-e", "0"]);
  });
  const base = { what: "node -e 0 p50", value: quantile(bare, 0.5) };
  console.log(`cycles: ${CYCLES} (after one warm-up cycle)`);
  console.log(line("assign → tool answers, p50", quantile(toAnswer, 0.5), "ms", base));
  console.log(
    line("assign → tool answers, p99", quantile(toAnswer, 0.99), "ms", {
      what: "node -e 0 p99",
      value: quantile(bare, 0.99),
    }),
  );
  await bus.close();
} finally {
  up.kill("SIGINT");
  await new Promise((resolve) => up.once("exit", resolve));
  await rm(root, { recursive: true, force: true });
}
