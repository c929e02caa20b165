/**
 * A fleet-wide rollout on a real bus (issue 22's bench): a whole mesh (`mesh up` on a temporary
 * root: its nats-server, controller and one real host, `bench-0`, which runs the mesh's own
 * indexer, builder and assigner as modules and really runs hello), and N simulated nodes joined through the real join path,
 * each speaking the host's protocol as its own host credential (`fleet-sim.ts`: a presence
 * heartbeat, its composition watched, a `mesh-have` report per composed module, healthy once
 * composed). Every node, the real host included, beats every `BENCH_ROLLOUT_HEARTBEAT_MS`.
 *
 * hello is copied to a folder of its own, added and assigned to every node. Then, in the same run:
 *
 * - **all at once**: `mesh rollout set hello --batch 100%`, an edit of hello's source, and the
 *   time from its build being built to every simulated node reporting it healthy;
 * - **in waves**: `mesh rollout set hello --canary 1 --batch 10% --min-healthy <S>s`, another
 *   edit, the same time.
 *
 * The waves' added time (in waves minus all at once) is set against their gates' min-healthy
 * times (waves − 1 gates): the issue asks for at most 1.10. A gate holds at the first heartbeat
 * of each node after its min-healthy (decision 0130), so the heartbeat interval is what the
 * waves add beyond their gates, with the assigner's and the controller's passes per wave.
 *
 *   npm run build && npm run bench -- rollout-bus
 *
 * Knobs: BENCH_ROLLOUT_N (1000), BENCH_ROLLOUT_MIN_HEALTHY_S (30), BENCH_ROLLOUT_HEARTBEAT_MS
 * (1000), BENCH_ROLLOUT_BATCH ("10%"), BENCH_ROLLOUT_JOINS_AT_ONCE (8).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus } from "@mesh/bus";
import { freePort } from "@mesh/bus/testing";
import { Bucket, type Rollout } from "@mesh/protocol";
import type { SimNode } from "./fleet-sim.js";
import {
  joinFleet,
  lastAt,
  logSize,
  mesh,
  passesSince,
  startMesh,
  stopMesh,
  waitUntil,
} from "./fleet-mesh.js";

const HELLO = fileURLToPath(new URL("../../examples/modules/hello", import.meta.url));
const env = process.env;
const N = Number(env["BENCH_ROLLOUT_N"] ?? 1000);
const MIN_HEALTHY_S = Number(env["BENCH_ROLLOUT_MIN_HEALTHY_S"] ?? 30);
const HEARTBEAT_MS = Number(env["BENCH_ROLLOUT_HEARTBEAT_MS"] ?? 1000);
const BATCH = env["BENCH_ROLLOUT_BATCH"] ?? "10%";
const AT_ONCE = Number(env["BENCH_ROLLOUT_JOINS_AT_ONCE"] ?? 8);
/** No rollout of this bench takes an hour; past it, something is stuck. */
const LIMIT_MS = 3_600_000;

interface Rolled {
  readonly build: string;
  /** From the build built to every simulated node composed with it, and reporting it healthy. */
  readonly composedMs: number;
  readonly healthyMs: number;
  readonly record: Rollout | undefined;
  /** Each wave: when it was given and when its last simulated node ran it healthy (ms after built). */
  readonly waves: WaveTimes[];
  readonly passes: number[];
}

interface WaveTimes {
  readonly wave: number;
  readonly givenMs: number;
  readonly nodes: readonly string[];
  healthyMs?: number;
}

interface Fleet {
  readonly root: string;
  readonly source: string;
  readonly operator: MeshBus;
  readonly sims: readonly SimNode[];
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function run(f: Fleet, args: readonly string[]): Promise<void> {
  const done = await mesh(f.root, args);
  if (done.code !== 0) throw new Error(`mesh ${args.join(" ")} failed (${done.code}): ${done.out}`);
}

/** The build of hello made from candidate `seq`, once built; the moment it was seen built. */
async function built(f: Fleet, seq: number): Promise<{ build: string; at: number }> {
  const builds = await KvBucket.open(f.operator, Bucket.builds);
  const start = Date.now();
  for (;;) {
    for (const key of await builds.keys("hello.*")) {
      const value = (await builds.get(key))?.value;
      if (value?.candidate !== seq) continue;
      if (value.status === "failed") throw new Error(`hello's build ${key} failed: ${value.error}`);
      if (value.status === "built") return { build: value.build, at: Date.now() };
    }
    if (Date.now() - start > LIMIT_MS) throw new Error(`hello's candidate ${seq} was never built`);
    await pause(100);
  }
}

const s = (ms: number): string => (ms / 1000).toFixed(1);

/**
 * When the last of these nodes ran `build` healthy (ms since the epoch): a simulated node's own
 * record, the real host's (bench-0) from its report's `since`; undefined if one has not.
 */
async function healthyAt(
  f: Fleet,
  nodes: readonly string[],
  build: string,
): Promise<number | undefined> {
  const have = await KvBucket.open(f.operator, Bucket.have);
  const sims = new Map(f.sims.map((sim) => [sim.node, sim]));
  let last = 0;
  for (const node of nodes) {
    const sim = sims.get(node);
    const report = sim === undefined ? (await have.get(`${node}.hello`))?.value : undefined;
    const at =
      sim?.healthyAt.get(`hello@${build}`) ??
      (report?.build === build && report.health === "healthy"
        ? Date.parse(report.since)
        : undefined);
    if (at === undefined) return undefined;
    last = Math.max(last, at);
  }
  return last;
}

/**
 * An edit of hello's source (its greeting, so the bundle differs), its build, and the time until
 * every simulated node runs it healthy, the waves given meanwhile read from the record.
 */
async function rollOut(f: Fleet, seq: number): Promise<Rolled> {
  const file = join(f.source, "src", "tools.ts");
  const text = await readFile(file, "utf8");
  await writeFile(file, text.replace(/let greeting = "[^"]*";/, `let greeting = "Hello ${seq}";`));
  const assignerFrom = await logSize(f.root, "assigner");
  const { build, at } = await built(f, seq);
  const rollouts = await KvBucket.open(f.operator, Bucket.rollouts);
  const waves: WaveTimes[] = [];
  let record: Rollout | undefined;
  while (lastAt(f.sims, "hello", "healthyAt", build) === undefined) {
    if (Date.now() - at > LIMIT_MS) throw new Error(`build ${build} never reached every node`);
    record = (await rollouts.get("hello"))?.value;
    if (record?.build === build && record.wave > (waves.at(-1)?.wave ?? 0)) {
      const given = { wave: record.wave, givenMs: Date.now() - at, nodes: record.waveNodes };
      waves.push(given);
      // Said as it comes: a rollout that stalls still shows how far it went.
      console.log(
        `  wave ${given.wave} of ${record.waves} given ${s(given.givenMs)} s after built`,
      );
    }
    await pause(50);
  }
  record = (await rollouts.get("hello"))?.value;
  for (const w of waves) {
    const last = await healthyAt(f, w.nodes, build);
    if (last !== undefined) w.healthyMs = last - at;
  }
  return {
    build,
    composedMs: (lastAt(f.sims, "hello", "composedAt", build) ?? Number.NaN) - at,
    healthyMs: (lastAt(f.sims, "hello", "healthyAt", build) ?? Number.NaN) - at,
    record,
    waves,
    passes: await passesSince(f.root, "assigner", assignerFrom),
  };
}

function report(what: string, r: Rolled): void {
  const waves = r.record?.build === r.build ? r.record.waves : Number.NaN;
  const sum = r.passes.reduce((a, b) => a + b, 0);
  console.log(
    `${what}: build ${r.build} composed on every node ${s(r.composedMs)} s, healthy on every node ` +
      `${s(r.healthyMs)} s after it was built; ${waves} wave(s), ${r.record?.status ?? "no record"}`,
  );
  const gateMs = MIN_HEALTHY_S * 1000;
  r.waves.forEach((w, i) => {
    const next = r.waves[i + 1];
    const beyond =
      next === undefined || w.healthyMs === undefined
        ? ""
        : `; the next given ${s(next.givenMs - w.healthyMs - gateMs)} s past its min-healthy`;
    console.log(
      `  wave ${w.wave}: ${w.nodes.length} nodes, given at ${s(w.givenMs)} s, all healthy at ${w.healthyMs === undefined ? "?" : s(w.healthyMs)} s${beyond}`,
    );
  });
  console.log(
    `  assigner passes meanwhile: ${r.passes.length}, longest ${Math.max(0, ...r.passes)} ms, all ${sum} ms`,
  );
}

/** The two rollouts and the verdict: what waves add, against their gates' min-healthy times. */
async function compare(f: Fleet): Promise<boolean> {
  await run(f, ["rollout", "set", "hello", "--batch", "100%"]);
  const once = await rollOut(f, 2);
  report("all at once (batch 100%)", once);
  await run(f, ["rollout", "set", "hello", "--clear"]);
  const policy = ["--canary", "1", "--batch", BATCH, "--min-healthy", `${MIN_HEALTHY_S}s`];
  await run(f, ["rollout", "set", "hello", ...policy]);
  const waved = await rollOut(f, 3);
  report(`in waves (canary 1, batch ${BATCH}, min-healthy ${MIN_HEALTHY_S}s)`, waved);
  const gates = (waved.record?.waves ?? Number.NaN) - 1;
  const gatesMs = gates * MIN_HEALTHY_S * 1000;
  const added = waved.healthyMs - once.healthyMs;
  const ratio = added / gatesMs;
  console.log(
    `added ${s(added)} s over ${gates} gates of ${MIN_HEALTHY_S} s = ${s(gatesMs)} s: ratio ${ratio.toFixed(3)} (at most 1.10)`,
  );
  console.log(
    `  beyond its min-healthy, per gate: ${s((added - gatesMs) / gates)} s (heartbeat every ${s(HEARTBEAT_MS)} s)`,
  );
  return ratio <= 1.1;
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "mesh-bench-rollout-"));
  const { up, ready } = startMesh(root, await freePort(), ["--heartbeat-ms", String(HEARTBEAT_MS)]);
  const sims: SimNode[] = [];
  let holds = false;
  try {
    const up_ = await ready;
    const operator = await MeshBus.connectWithFile(up_.credentials.operator);
    const joined = await joinFleet(operator, up_.bus.url, {
      n: N,
      atOnce: AT_ONCE,
      budgetMs: LIMIT_MS,
      heartbeatMs: HEARTBEAT_MS,
      attempts: 3,
    });
    sims.push(...joined.sims);
    console.log(
      `nodes: ${sims.length} simulated (of ${N}; ${joined.failures.length} joins failed and tried again, at most 3 times) and 1 real host; every node beats every ${HEARTBEAT_MS} ms`,
    );
    for (const failure of joined.failures.slice(0, 5)) console.log(`  failed: ${failure}`);
    await waitUntil(
      () => lastAt(sims, "node-tools", "healthyAt") !== undefined,
      LIMIT_MS,
      "node-tools everywhere",
    );
    const source = join(root, "src", "hello");
    await cp(HELLO, source, { recursive: true });
    const f: Fleet = { root, source, operator, sims };
    await run(f, ["module", "add", source, "--wait"]);
    await run(f, ["assign", "hello", "--all"]);
    await waitUntil(
      () => lastAt(sims, "hello", "healthyAt") !== undefined,
      LIMIT_MS,
      "hello everywhere",
    );
    holds = await compare(f);
    await operator.close();
  } finally {
    await Promise.allSettled(sims.map((sim) => sim.close()));
    await stopMesh(up);
    await rm(root, { recursive: true, force: true });
  }
  if (!holds) {
    console.log("the waves added more than their gates' min-healthy times plus 10%");
    process.exitCode = 1;
  }
}

await main();
