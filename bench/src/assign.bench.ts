/**
 * From `mesh assign` to the module's tool answering: a whole mesh (`mesh up` on a temporary
 * root), hello registered and built once, then repeated cycles of unassign (until the tool no
 * longer answers) and assign (timed until it answers again), each broken into its phases (the
 * want's and the composition's server times, the unpacked bundle's time on disk, the new
 * runtime's own account in its status file). Beside it, in the same run, the time of a bare
 * `node -e 0` process start: the floor any delivery that starts a process stands on.
 *
 *   npm run build && npm run bench -- assign
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus, request } from "@mesh/bus";
import { freePort } from "@mesh/bus/testing";
import { Bucket, nodeKey, nodeModuleKey, targetModuleKey, toolSubject } from "@mesh/protocol";
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
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** When the assigner's want and the controller's composition for hello were written (server time). */
interface Seen {
  wants: number[];
  composed: Array<{ at: number; digest: string | undefined }>;
}

async function watchTimes(bus: MeshBus): Promise<Seen> {
  const seen: Seen = { wants: [], composed: [] };
  const wants = await KvBucket.open(bus, Bucket.wants);
  const composed = await KvBucket.open(bus, Bucket.composed);
  void (async () => {
    for await (const e of wants.watch({ key: nodeModuleKey(NODE, "hello") }))
      if (e.type === "put") seen.wants.push(e.created.getTime());
  })();
  void (async () => {
    for await (const e of composed.watch({ key: nodeKey(NODE) })) {
      if (e.type !== "put") continue;
      for (const r of e.value.resources) {
        if (r.module === "hello" && r.type === "archive")
          seen.composed.push({ at: e.created.getTime(), digest: r.digest });
      }
    }
  })();
  return seen;
}

const PHASE_NAMES = [
  ["assigner", "assigner pass (assign → want written)"],
  ["controller", "controller pass (want → composed, no reload)"],
  ["archive", "host: archive fetch + verify + unpack (composed → unpacked)"],
  ["apply", "host: rest of the apply (unpacked → runtime told to serve)"],
  ["runtime", "runtime start (told → connected, created)"],
  ["worker", "worker start (hello's worker → its tools loaded)"],
  ["register", "service registration (loaded → subscribed, flushed)"],
  ["rest", "the rest (worker queued, status, the caller's poll)"],
  ["total", "assign → tool answers"],
] as const;
type Phases = Record<(typeof PHASE_NAMES)[number][0], number>;

/** Reads where each step of one cycle's time went, from the bus, the host's files and the runtime's status. */
async function phasesOf(dir: string, start: number, answered: number, seen: Seen): Promise<Phases> {
  const want = seen.wants.find((t) => t >= start - 5) ?? Number.NaN;
  const composed = seen.composed.find((c) => c.at >= want) ?? { at: Number.NaN, digest: "" };
  const unpacked = (
    await stat(join(dir, "bundles", "hello", `.tools@${composed.digest ?? ""}`)).catch(
      () => undefined,
    )
  )?.mtimeMs;
  // The status is written just after the service subscribes: read once it says so.
  let status: RuntimeSeen | undefined;
  for (let tries = 0; status === undefined && tries < 200; tries++) {
    status = await servingStatus(dir);
    if (status === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // A standby taking over was spawned long before: its start on this path is the takeover.
  const spawned = Date.parse(status?.started.takeover ?? status?.started.process ?? "");
  const created = Date.parse(status?.started.runtime ?? "");
  const last = status?.modules["hello"]?.last;
  const archive = (unpacked ?? Number.NaN) - composed.at;
  const phases = {
    assigner: want - start,
    controller: composed.at - want,
    archive,
    apply: spawned - composed.at - archive,
    runtime: created - spawned,
    worker: last?.loadMs ?? Number.NaN,
    register: last?.serveMs ?? Number.NaN,
    total: answered - start,
  };
  return { ...phases, rest: answered - created - phases.worker - phases.register };
}

/** The status of the newest runtime serving hello, once it says so. */
async function servingStatus(dir: string): Promise<RuntimeSeen | undefined> {
  let newest: RuntimeSeen | undefined;
  for (const name of await readdir(join(dir, "run"))) {
    if (!/^node-tools\.\d+\.status\.json$/.test(name)) continue;
    const text = await readFile(join(dir, "run", name), "utf8").catch(() => "");
    const s = text === "" ? undefined : (JSON.parse(text) as RuntimeSeen);
    if (s?.modules["hello"]?.state !== "serving" || s.modules["hello"].last === undefined) continue;
    if (newest === undefined || s.started.runtime > newest.started.runtime) newest = s;
  }
  return newest;
}

/**
 * Whether the node is at rest: the runtime's standby (booted after each handover) says it is
 * ready, and has not taken over since. A change that lands while it still boots waits for it.
 */
async function standbyReady(dir: string): Promise<boolean> {
  const log = await readFile(join(dir, "logs", "node-tools", "node-tools.stderr.log"), "utf8");
  const standing = [...log.matchAll(/standing by \(pid (\d+)\)/g)].at(-1);
  if (standing?.index === undefined) return false;
  return !log.slice(standing.index).includes(`taking over (pid ${standing[1]})`);
}

interface RuntimeSeen {
  readonly started: {
    readonly process: string;
    readonly takeover?: string;
    readonly runtime: string;
  };
  readonly modules: Record<string, { state: string; last?: { loadMs: number; serveMs: number } }>;
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

  const seen = await watchTimes(bus);
  // One cycle: unassign, wait until the tool is gone, then assign and time until it answers,
  // with when each step of the way happened.
  const cycle = async (): Promise<Phases> => {
    await assignments.delete(key);
    await waitFor(async () => !(await answers(bus)), 120_000, "hello to stop answering");
    await waitFor(() => standbyReady(root), 120_000, "the runtime's standby");
    const start = Date.now();
    await assign();
    await waitFor(() => answers(bus), 120_000, "hello to answer again");
    const answered = Date.now();
    return phasesOf(root, start, answered, seen);
  };
  await cycle(); // warm-up
  const phases: Phases[] = [];
  for (let i = 0; i < CYCLES; i++) phases.push(await cycle());
  const toAnswer = phases.map((p) => p.total);
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
  console.log("phases, p50 of each (ms):");
  for (const [name, what] of PHASE_NAMES) {
    const known = phases.map((p) => p[name]).filter(Number.isFinite);
    console.log(`  ${what.padEnd(58)} ${quantile(known, 0.5).toFixed(1)}`);
  }
  await bus.close();
} finally {
  up.kill("SIGINT");
  await new Promise((resolve) => up.once("exit", resolve));
  await rm(root, { recursive: true, force: true });
}
