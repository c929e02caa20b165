/**
 * `mesh status` and the view against a big fleet's real bucket entries (issue 13): a test
 * nats-server holding, for N nodes × M modules (default 10,000 × 20), a presence per node and a
 * want and a have per cell, each module assigned everywhere with its registration — every
 * entry written through the bus, as the assigner and the hosts write them, and the fleet's summary
 * as the assigner keeps it (decision 0090). Measured, against
 * the CLI's start (`mesh --version`) in the same run: `mesh status`, `mesh status --json`, and
 * `mesh wants`, `mesh differences` (a first page, and one past what the summary carries) and the
 * view's first paint (`mesh view` up, its page's state and first grid page answered), with
 * the size of what each printed or sent.
 *
 *   npm run build && npm run bench -- status
 *   BENCH_STATUS_NODES=1000 BENCH_STATUS_MODULES=5 npm run bench -- status   # a small one
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus, ensureLayout, writeCredential } from "@mesh/bus";
import { credentialFor, startTestServer } from "@mesh/bus/testing";
import { emptyFleetState, operatorGrant, summarizeFleet, type FleetState } from "@mesh/core";
import {
  Bucket,
  Principal,
  SUMMARY_KEY,
  type Assignment,
  type Difference,
  type Have,
  type ModuleRegistration,
  type Presence,
  type Want,
} from "@mesh/protocol";
import { line, quantile } from "./measure.js";
import { viewFirstPaint } from "./view-paint.js";

const CLI = fileURLToPath(new URL("../../packages/cli/dist/main.js", import.meta.url));
const NODES = Number(process.env["BENCH_STATUS_NODES"] ?? 10_000);
const MODULES = Number(process.env["BENCH_STATUS_MODULES"] ?? 20);
const HUB = "hub";
const RUNS = 3;

/** Runs the CLI; what it printed and how long it took (to its exit). */
async function mesh(
  args: readonly string[],
): Promise<{ ms: number; out: string; err: string; code: number }> {
  const start = performance.now();
  // BENCH_STATUS_PROFILE=<dir>: each CLI run writes a CPU profile there.
  const profile = process.env["BENCH_STATUS_PROFILE"];
  const node = profile === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", profile];
  const child = spawn(process.execPath, [...node, CLI, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (err += chunk));
  const code = await new Promise<number>((r) => child.once("close", (c) => r(c ?? -1)));
  return { ms: performance.now() - start, out, err, code };
}

/**
 * Writes the fleet: presence, a want and a have per cell (a difference per failing one), 2,000 puts at a time; then the
 * fleet's summary as the assigner keeps it (core's `summarizeFleet` of the same entries), timed.
 */
async function fill(admin: MeshBus): Promise<number> {
  const state = {
    ...emptyFleetState(),
    presence: new Map<string, Presence>(),
    assignments: new Map<string, Assignment>(),
    registrations: new Map<string, ModuleRegistration>(),
    wants: new Map<string, Want>(),
    have: new Map<string, Have>(),
    differences: new Map<string, Difference>(),
  };
  const entries = await fillBuckets(admin, state);
  const started = performance.now();
  const summary = summarizeFleet({ ...state, now: Date.now() });
  const ms = performance.now() - started;
  await (await KvBucket.open(admin, Bucket.summary)).put(SUMMARY_KEY, summary);
  console.log(
    `the assigner's summary: computed in ${Math.round(ms)} ms, ${JSON.stringify(summary).length} bytes`,
  );
  return entries + 1;
}

type Filled = Pick<FleetState, "now"> & {
  presence: Map<string, Presence>;
  assignments: Map<string, Assignment>;
  registrations: Map<string, ModuleRegistration>;
  wants: Map<string, Want>;
  have: Map<string, Have>;
  differences: Map<string, Difference>;
};

async function fillBuckets(admin: MeshBus, state: Filled): Promise<number> {
  const at = new Date().toISOString();
  const modules = Array.from({ length: MODULES }, (_, i) => `m${String(i).padStart(2, "0")}`);
  const by = { by: "ada", at };
  const registrations = await KvBucket.open(admin, Bucket.modules);
  const assignments = await KvBucket.open(admin, Bucket.assignments);
  for (const module of modules) {
    const registration: ModuleRegistration = {
      module,
      source: { kind: "directory", path: "/src" },
      ...by,
    };
    await registrations.put(module, registration);
    await assignments.put(`all.${module}`, by);
    state.registrations.set(module, registration);
    state.assignments.set(`all.${module}`, by);
  }
  const presence = await KvBucket.open(admin, Bucket.presence);
  const wants = await KvBucket.open(admin, Bucket.wants);
  const have = await KvBucket.open(admin, Bucket.have);
  const differences = await KvBucket.open(admin, Bucket.differences);
  const build = "1-0123abcd";
  const puts: Array<() => Promise<unknown>> = [];
  for (let i = 0; i < NODES; i++) {
    const node = `n${String(i).padStart(5, "0")}`;
    const p: Presence = {
      node,
      facts: { hostname: node, os: "linux", arch: "x64", version: "0.1.0" },
      publicKey: "k",
      heartbeat: at,
    };
    state.presence.set(node, p);
    puts.push(() => presence.put(node, p));
    for (const module of modules) {
      const key = `${node}.${module}`;
      const want: Want = {
        build,
        manifestDigest: "d".repeat(64),
        fingerprint: "f".repeat(16),
        rule: "newest",
        reason: `the build of ${module}'s newest candidate (1)`,
      };
      const h: Have = {
        build,
        fingerprint: "f".repeat(16),
        health: i % 97 === 0 ? "failing" : "healthy",
        since: at,
        restarts: 0,
      };
      state.wants.set(key, want);
      state.have.set(key, h);
      puts.push(() => wants.put(key, want));
      puts.push(() => have.put(key, h));
      // The failing cells differ too: more differences than the summary carries (its first 100).
      if (h.health === "failing") {
        const d: Difference = { want: build, have: build, reasons: [`${module} fails on ${node}`] };
        state.differences.set(key, d);
        puts.push(() => differences.put(key, d));
      }
    }
  }
  for (let i = 0; i < puts.length; i += 2_000) {
    await Promise.all(puts.slice(i, i + 2_000).map((put) => put()));
  }
  return puts.length + 2 * modules.length;
}

async function main(): Promise<void> {
  const server = await startTestServer({
    users: [
      { user: "operator", password: "operator-pw", permissions: operatorGrant({ node: HUB }) },
    ],
  });
  const dir = await mkdtemp(join(tmpdir(), "mesh-bench-status-"));
  try {
    await using admin = await MeshBus.connect(
      credentialFor(server, server.admin, { node: HUB, module: "controller" }),
    );
    await ensureLayout(admin);
    const started = performance.now();
    const entries = await fill(admin);
    console.log(
      `${NODES} nodes × ${MODULES} modules: ${entries} bucket entries written in ${Math.round(performance.now() - started)} ms`,
    );
    const credential = join(dir, "operator.json");
    await writeCredential(
      credential,
      credentialFor(
        server,
        { user: "operator", password: "operator-pw" },
        { node: HUB, module: Principal.operator },
      ),
    );
    const bare: number[] = [];
    for (let i = 0; i < RUNS; i++) bare.push((await mesh(["--version"])).ms);
    const base = { what: "mesh --version (the CLI's start)", value: quantile(bare, 0.5) };
    // `mesh wants` and `mesh differences` page as status does (decision 0218): a first page, and
    // one of differences past what the summary carries, read by key.
    for (const args of [
      ["status"],
      ["status", "--json"],
      ["wants"],
      ["wants", "--json"],
      ["differences"],
      ["differences", "--from", "1000", "--json"],
    ]) {
      const runs: Array<{ ms: number; out: string; err: string; code: number }> = [];
      for (let i = 0; i < RUNS; i++) runs.push(await mesh([...args, "--credential", credential]));
      const failed = runs.find((r) => r.code !== 0);
      if (failed !== undefined) {
        console.log(
          `mesh ${args.join(" ")} failed (exit ${failed.code}) after ${Math.round(failed.ms)} ms: ${failed.err.slice(0, 600)}`,
        );
        continue;
      }
      const p50 = quantile(
        runs.map((r) => r.ms),
        0.5,
      );
      console.log(line(`mesh ${args.join(" ")}, p50 of ${RUNS}`, p50, "ms", base));
      console.log(`  printed ${runs[0]?.out.length ?? 0} bytes`);
    }
    const paints: Array<{ ms: number; bytes: number }> = [];
    for (let i = 0; i < RUNS; i++) paints.push(await viewFirstPaint(["--credential", credential]));
    const p50 = quantile(
      paints.map((p) => p.ms),
      0.5,
    );
    console.log(line(`the view's first paint, p50 of ${RUNS}`, p50, "ms", base));
    console.log(`  state + first grid page: ${paints[0]?.bytes ?? 0} bytes`);
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
