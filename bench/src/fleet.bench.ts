/**
 * A fleet on one machine (issue 13.4): a whole mesh (`mesh up` on a temporary root, its real
 * controller, assigner, builder and one real host), then N simulated nodes joined through the
 * real join path (`mesh.controller.join-token`, then `mesh.join` as the token's join user), each
 * a light in-process node speaking the host's protocol as its own host credential
 * (`fleet-sim.ts`). Measured, each beside a baseline taken on the same bus in the same run:
 *
 * - join throughput (token + join + connected), and each join's time early and late;
 * - `mesh assign hello --all` until every node has hello composed, and until each reported it
 *   healthy; the controller's and the assigner's passes meanwhile (from their logs);
 * - bus messages per node per minute at rest (heartbeats, watches' idle heartbeats), counted on
 *   the simulated nodes' own connections;
 * - `mesh status` and `mesh status --json`: time and size of what they print; the view's first
 *   paint (its state and first grid page answered);
 * - the broker: a join-token ask (one user signed and kept) and each account update
 *   (revocations) the controller logs, early and late in the joins; the controller's pass time
 *   per node while joining, early and late;
 * - the longest run of joins in a row that all succeeded.
 *
 *   npm run build && npm run bench -- fleet                      # N = 100
 *   BENCH_FLEET_N=1000 npm run bench -- fleet                    # N = 1,000 (long)
 *
 * Other knobs: BENCH_FLEET_JOINS_AT_ONCE (8), BENCH_FLEET_BUDGET_S (joins stop after it, 1200),
 * BENCH_FLEET_ATTEMPTS (how many times a node tries to join, with a new token each, 1),
 * BENCH_FLEET_REST_S (60), BENCH_FLEET_AUTH (passed to `mesh up --auth` when set),
 * BENCH_FLEET_LOGS (a folder the mesh's logs are copied to before its root is removed).
 */
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus } from "@mesh/bus";
import { natsOf } from "@mesh/bus/internal";
import { freePort } from "@mesh/bus/testing";
import type { SimNode } from "./fleet-sim.js";
import {
  joinFleet,
  lastAt,
  logSize,
  mesh,
  passLines,
  passesSince,
  startMesh,
  stopMesh,
  waitUntil,
} from "./fleet-mesh.js";
import { line, quantile, timeEach } from "./measure.js";
import { viewFirstPaint } from "./view-paint.js";

const HELLO = fileURLToPath(new URL("../../examples/modules/hello", import.meta.url));
const env = process.env;
const N = Number(env["BENCH_FLEET_N"] ?? 100);
const AT_ONCE = Number(env["BENCH_FLEET_JOINS_AT_ONCE"] ?? 8);
const BUDGET_MS = Number(env["BENCH_FLEET_BUDGET_S"] ?? 1200) * 1000;
const REST_MS = Number(env["BENCH_FLEET_REST_S"] ?? 60) * 1000;
const HEARTBEAT_MS = 15_000;
const ATTEMPTS = Number(env["BENCH_FLEET_ATTEMPTS"] ?? 1);
const JOINS = {
  n: N,
  atOnce: AT_ONCE,
  budgetMs: BUDGET_MS,
  heartbeatMs: HEARTBEAT_MS,
  attempts: ATTEMPTS,
};
const AUTH = env["BENCH_FLEET_AUTH"] === undefined ? [] : ["--auth", env["BENCH_FLEET_AUTH"]];

/** The controller's passes while the fleet joined: early and late, and the account updates. */
async function joinPasses(root: string, flush: { what: string; value: number }): Promise<void> {
  const passes = (await passLines(root, "controller", 0)).filter((p) => p.nodes < 50);
  const tenth = Math.max(1, Math.floor(passes.length / 10));
  const perNode = (ps: typeof passes) =>
    quantile(
      ps.map((p) => p.ms / Math.max(1, p.nodes)),
      0.5,
    );
  console.log(
    `  controller passes while joining: ${passes.length}; per node of a pass, p50: first tenth ${perNode(passes.slice(0, tenth)).toFixed(1)} ms, last tenth ${perNode(passes.slice(-tenth)).toFixed(1)} ms`,
  );
  // An update is said on the pass's line, or on its own line when pushed beside the passes.
  const text = await readFile(join(root, "logs", "mesh", "controller.log"), "utf8").catch(() => "");
  const updates = [...text.matchAll(/account update (\d+) ms/g)].map((m) => Number(m[1]));
  console.log(`  account updates while joining: ${updates.length}`);
  const uTenth = Math.max(1, Math.floor(updates.length / 10));
  console.log(
    line(
      "broker revoke (one account update), first tenth p50",
      quantile(updates.slice(0, uTenth), 0.5),
      "ms",
      flush,
    ),
  );
  console.log(
    line(
      "broker revoke (one account update), last tenth p50",
      quantile(updates.slice(-uTenth), 0.5),
      "ms",
      flush,
    ),
  );
}

/** Every account update of the run: how many, what they revoked, how long each took. */
async function runUpdates(root: string): Promise<void> {
  const text = await readFile(join(root, "logs", "mesh", "controller.log"), "utf8").catch(() => "");
  const said = [
    ...text.matchAll(/(\d+) revoked, (\d+) of them spent join users \(account update (\d+) ms\)/g),
  ];
  const revoked = sum(said.map((m) => Number(m[1])));
  const joins = sum(said.map((m) => Number(m[2])));
  const ms = said.map((m) => Number(m[3]));
  console.log(
    `account updates over the run: ${said.length}, revoking ${revoked} (${joins} spent join users); each ${ms.join(", ")} ms`,
  );
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const max = (xs: readonly number[]): number => xs.reduce((a, b) => Math.max(a, b), 0);

/** The floor for N writes: the operator's writes of N config keys of a node that is not there. */
async function writeFloor(credential: string, n: number): Promise<number> {
  // Waits for the bus: on a loaded machine a login can time out (the server's 2 s).
  const operator = await MeshBus.connectWithFile(credential, {
    waitForBus: true,
    say: () => undefined,
  });
  try {
    const config = await KvBucket.open(operator, "mesh-config");
    const [ms] = await timeEach(1, async () => {
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          config.put(`bench.k${i}.nobody`, { value: i, by: "bench", at: new Date().toISOString() }),
        ),
      );
    });
    return ms ?? Number.NaN;
  } finally {
    await operator.close();
  }
}

/** `mesh assign hello --all` until every simulated node has it composed, then healthy. */
async function assignEverywhere(
  root: string,
  operatorCredential: string,
  sims: readonly SimNode[],
): Promise<void> {
  const add = await mesh(root, ["module", "add", HELLO, "--wait"]);
  if (add.code !== 0) throw new Error(`mesh module add hello failed: ${add.out}`);
  const base = {
    what: `${sims.length} bare KV puts, all awaited`,
    value: await writeFloor(operatorCredential, sims.length),
  };
  const controllerFrom = await logSize(root, "controller");
  const assignerFrom = await logSize(root, "assigner");
  const start = Date.now();
  const assign = await mesh(root, ["assign", "hello", "--all"]);
  if (assign.code !== 0) throw new Error(`mesh assign hello --all failed: ${assign.out}`);
  await waitUntil(
    () => lastAt(sims, "hello", "healthyAt") !== undefined,
    900_000,
    "hello healthy everywhere",
  );
  const composed = (lastAt(sims, "hello", "composedAt") ?? Number.NaN) - start;
  const healthy = (lastAt(sims, "hello", "healthyAt") ?? Number.NaN) - start;
  console.log(
    line(`mesh assign hello --all → composed on all ${sims.length}`, composed, "ms", base),
  );
  console.log(line(`mesh assign hello --all → healthy on all ${sims.length}`, healthy, "ms", base));
  const c = await passesSince(root, "controller", controllerFrom);
  const a = await passesSince(root, "assigner", assignerFrom);
  console.log(`  controller passes meanwhile: ${c.length}, longest ${max(c)} ms, all ${sum(c)} ms`);
  console.log(`  assigner passes meanwhile: ${a.length}, longest ${max(a)} ms, all ${sum(a)} ms`);
}

/** Messages per simulated node per minute while nothing changes. */
async function atRest(sims: readonly SimNode[]): Promise<void> {
  const before = sims.map((s) => s.messages());
  const start = Date.now();
  await new Promise((r) => setTimeout(r, REST_MS));
  const minutes = (Date.now() - start) / 60_000;
  const total = sum(sims.map((s, i) => s.messages() - (before[i] ?? 0)));
  const perNode = total / sims.length / minutes;
  // The floor: a host's presence heartbeat alone, a put and its answer every 15 s.
  const heartbeat = {
    what: "presence heartbeats alone (put + answer every 15 s)",
    value: (2 * 60_000) / HEARTBEAT_MS,
  };
  console.log(line("bus messages per node per minute at rest", perNode, "msgs", heartbeat));
}

/**
 * The view's first paint: from `mesh view` starting to its page's state and first grid page
 * answered (what a page fetches before it can draw), and how many bytes they are.
 */
async function viewPaints(root: string, base: { what: string; value: number }): Promise<void> {
  const runs: Array<{ ms: number; bytes: number }> = [];
  for (let i = 0; i < 3; i++) runs.push(await viewFirstPaint(["--root", root]));
  const p50 = quantile(
    runs.map((r) => r.ms),
    0.5,
  );
  console.log(
    line("the view's first paint (start + state + first grid page), p50 of 3", p50, "ms", base),
  );
  console.log(`  first paint bytes: ${runs[0]?.bytes ?? 0}`);
}

/** `mesh status` and `--json`: the time each takes and the size of what it prints. */
async function statusFigures(root: string): Promise<void> {
  const bare: number[] = [];
  for (let i = 0; i < 3; i++) bare.push((await mesh(root, ["--version"])).ms);
  const base = { what: "mesh --version (the CLI's start)", value: quantile(bare, 0.5) };
  await viewPaints(root, base);
  for (const args of [["status"], ["status", "--json"]]) {
    const runs: Array<{ ms: number; out: string }> = [];
    for (let i = 0; i < 3; i++) runs.push(await mesh(root, args));
    const p50 = quantile(
      runs.map((r) => r.ms),
      0.5,
    );
    console.log(line(`mesh ${args.join(" ")}, p50 of 3`, p50, "ms", base));
    console.log(
      `  printed ${runs[0]?.out.length ?? 0} bytes, ${runs[0]?.out.split("\n").length ?? 0} lines`,
    );
  }
}

/** Copies the mesh's logs to BENCH_FLEET_LOGS, when set, before the root goes. */
async function keepLogs(root: string): Promise<void> {
  const to = env["BENCH_FLEET_LOGS"];
  if (to !== undefined)
    await cp(join(root, "logs"), to, { recursive: true }).catch(() => undefined);
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "mesh-bench-fleet-"));
  const { up, ready } = startMesh(root, await freePort(), AUTH);
  const sims: SimNode[] = [];
  try {
    const report = await ready;
    const operator = await MeshBus.connectWithFile(report.credentials.operator);
    const rtt = await timeEach(20, () => natsOf(operator).nc.flush());
    const joined = await joinFleet(operator, report.bus.url, JOINS);
    sims.push(...joined.sims);
    const flush = { what: "a bare bus round trip (flush) p50", value: quantile(rtt, 0.5) };
    console.log(
      `nodes: ${joined.sims.length} of ${N} joined, ${joined.failures.length} failed, ${AT_ONCE} at once`,
    );
    for (const f of joined.failures.slice(0, 5)) console.log(`  failed: ${f}`);
    console.log(`  the longest run of joins in a row that all succeeded: ${joined.longestRun}`);
    console.log(line("join throughput", (joined.sims.length * 1000) / joined.wallMs, "joins/s"));
    const tenthT = Math.max(1, Math.floor(joined.tokenMs.length / 10));
    console.log(
      line(
        "broker issue (a join-token ask: one user signed and kept), first tenth p50",
        quantile(joined.tokenMs.slice(0, tenthT), 0.5),
        "ms",
        flush,
      ),
    );
    console.log(
      line(
        "broker issue (a join-token ask: one user signed and kept), last tenth p50",
        quantile(joined.tokenMs.slice(-tenthT), 0.5),
        "ms",
        flush,
      ),
    );
    const tenth = Math.max(1, Math.floor(joined.ms.length / 10));
    console.log(
      line(
        "join (token + join + connected), first tenth p50",
        quantile(joined.ms.slice(0, tenth), 0.5),
        "ms",
        flush,
      ),
    );
    console.log(
      line(
        "join (token + join + connected), last tenth p50",
        quantile(joined.ms.slice(-tenth), 0.5),
        "ms",
        flush,
      ),
    );
    await waitUntil(
      () => lastAt(sims, "node-tools", "healthyAt") !== undefined,
      900_000,
      "node-tools on every node",
    );
    await joinPasses(root, flush);
    await assignEverywhere(root, report.credentials.operator, sims);
    await atRest(sims);
    await statusFigures(root);
    await runUpdates(root);
    console.log(
      `sealed needs opened: ${sum(sims.map((s) => s.opened))}, refused to open: ${sum(sims.map((s) => s.unopened))}`,
    );
    await operator.close();
  } finally {
    await Promise.allSettled(sims.map((s) => s.close()));
    await stopMesh(up);
    await keepLogs(root);
    await rm(root, { recursive: true, force: true });
  }
}

await main();
