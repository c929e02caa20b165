/**
 * The assigner's summary at fleet scale (issue 23.4, decision 0121): core's `SummaryIndex` kept
 * from the keys each burst moved, against `summarizeFleet` of the whole state (what the assigner
 * computed at each change before) in the same run. The fleet of the status bench: N nodes × M
 * modules (default 10,000 × 20), every module assigned everywhere and registered with a build,
 * a want and a have per cell, one node in 97 failing. Bursts: one report, 1,000 heartbeats (the
 * clock a second on), a new build of one module (each of its cells judged again), and the
 * index's first build (everything).
 *
 *   npm run build && npm run bench -- summary
 *   BENCH_SUMMARY_NODES=1000 npm run bench -- summary
 */
import {
  SummaryIndex,
  canonicalJson,
  emptyFleetState,
  summarizeFleet,
  type FleetChange,
  type FleetState,
} from "@mesh/core";
import {
  type Assignment,
  type Build,
  type Have,
  type ModuleRegistration,
  type Presence,
  type Want,
} from "@mesh/protocol";
import { line, quantile, timeEach } from "./measure.js";

const NODES = Number(process.env["BENCH_SUMMARY_NODES"] ?? 10_000);
const MODULES = Number(process.env["BENCH_SUMMARY_MODULES"] ?? 20);
const RUNS = 5;

type Fleet = FleetState & {
  now: number;
  presence: Map<string, Presence>;
  builds: Map<string, Build>;
  have: Map<string, Have>;
};

function fleet(now: number): Fleet {
  const at = new Date(now).toISOString();
  const modules = Array.from({ length: MODULES }, (_, i) => `m${String(i).padStart(2, "0")}`);
  const nodes = Array.from({ length: NODES }, (_, i) => `n${String(i).padStart(5, "0")}`);
  const registrations = new Map<string, ModuleRegistration>();
  const assignments = new Map<string, Assignment>();
  const builds = new Map<string, Build>();
  for (const m of modules) {
    registrations.set(m, {
      module: m,
      source: { kind: "directory", path: `/m/${m}` },
      by: "ada",
      at,
    });
    assignments.set(`all.${m}`, { by: "ada", at });
    builds.set(`${m}.1-aaaaaaaa`, build(m, "1-aaaaaaaa", 1, at));
  }
  const presence = new Map<string, Presence>();
  const wants = new Map<string, Want>();
  const have = new Map<string, Have>();
  nodes.forEach((n, i) => {
    // Heartbeats spread over the last 15 s, as hosts send them.
    const heartbeat = new Date(now - (i % 15_000)).toISOString();
    presence.set(n, {
      node: n,
      facts: { hostname: n, os: "linux", arch: "x64", version: "0" },
      publicKey: "k",
      heartbeat,
    });
    for (const m of modules) {
      wants.set(`${n}.${m}`, {
        build: "1-aaaaaaaa",
        manifestDigest: "a".repeat(64),
        fingerprint: "f",
        rule: "newest",
        reason: "newest",
      });
      have.set(`${n}.${m}`, {
        build: "1-aaaaaaaa",
        fingerprint: "f",
        health: i % 97 === 0 ? "failing" : "healthy",
        since: at,
        restarts: 0,
      });
    }
  });
  return {
    ...emptyFleetState(now),
    now,
    presence,
    assignments,
    registrations,
    builds,
    wants,
    have,
  };
}

function build(module: string, id: string, candidate: number, at: string): Build {
  return {
    module,
    build: id,
    status: "built",
    candidate,
    bundles: [],
    log: "",
    timings: { started: at },
  };
}

/** The index after `burst` changed the state, timed; the whole summary of the same state, timed. */
async function burst(
  what: string,
  state: Fleet,
  index: SummaryIndex,
  change: (i: number) => FleetChange[],
): Promise<void> {
  let incremental: ReturnType<SummaryIndex["update"]> | undefined;
  const inc = await timeEach(RUNS, (i) => {
    incremental = index.update(state, change(i));
  });
  let whole: ReturnType<typeof summarizeFleet> | undefined;
  const base = await timeEach(RUNS, () => {
    whole = summarizeFleet(state);
  });
  if (canonicalJson(incremental) !== canonicalJson(whole))
    throw new Error(`${what}: the summaries differ`);
  console.log(
    line(`${what} (median)`, quantile(inc, 0.5), "ms", {
      what: "the whole summary",
      value: quantile(base, 0.5),
    }),
  );
}

async function main(): Promise<void> {
  const now = Date.now();
  const state = fleet(now);
  console.log(`${NODES} nodes × ${MODULES} modules: ${state.have.size} cells`);
  const index = new SummaryIndex();
  const first = await timeEach(1, () => void index.update(state, []));
  const whole = await timeEach(RUNS, () => void summarizeFleet(state));
  console.log(
    line("the index's first build", first[0] as number, "ms", {
      what: "the whole summary",
      value: quantile(whole, 0.5),
    }),
  );
  const nodes = [...state.presence.keys()];
  await burst("one report (a cell turns failing)", state, index, (i) => {
    const key = `${nodes[i] as string}.m00`;
    state.have.set(key, { ...(state.have.get(key) as Have), health: "failing" });
    return [{ source: "have", key }];
  });
  await burst("1,000 heartbeats", state, index, (i) => {
    state.now += 1_000;
    const out: FleetChange[] = [];
    for (let k = 0; k < 1_000; k++) {
      const node = nodes[(i * 1_000 + k) % nodes.length] as string;
      const p = state.presence.get(node) as Presence;
      state.presence.set(node, { ...p, heartbeat: new Date(state.now).toISOString() });
      out.push({ source: "presence", key: node });
    }
    return out;
  });
  await burst("a new build of one module", state, index, (i) => {
    const id = `${i + 2}-bbbbbbbb`;
    state.builds.set(`m01.${id}`, build("m01", id, i + 2, new Date(state.now).toISOString()));
    return [{ source: "builds", key: `m01.${id}` }];
  });
}

await main();
