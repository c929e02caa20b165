/**
 * `npm run chaos -- --fleet`: the network scenarios (issue 23.2) on a fleet of its own — three
 * bus servers and three nodes on network namespaces (fleet.ts) — one after another, each measured
 * by fleet-faults.ts; then slow-lossy-links and slow-server-partition on a fleet of their own whose
 * node links are slow and lossy from the start (fleet-link-faults.ts). Prints a table and writes it into
 * docs/reliability.md between its markers.
 * `--away S` sets how long the node stays cut off (300 s by default, as the issue asks).
 */
import { readFile, writeFile } from "node:fs/promises";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Fleet } from "./fleet.js";
import { markdownTable } from "./markdown-table.js";
import { awayThroughChanges, nodePartition, type NetFaultResult } from "./fleet-faults.js";
import {
  minorityPartition,
  refusedJoins,
  serverKillAndPartition,
  serverPartition,
} from "./fleet-server-faults.js";
import { slowLossyLinks, slowServerPartition, startSlowFleet } from "./fleet-link-faults.js";

const REPORT = new URL("../../../../docs/reliability.md", import.meta.url);
const BEGIN = "<!-- chaos-fleet:begin -->";
const END = "<!-- chaos-fleet:end -->";

/** The scenarios, in the order they run. */
export const SCENARIOS = [
  "node-partition",
  "away-through-changes",
  "server-partition",
  "minority-partition",
  "server-kill-and-partition",
  "refused-joins",
  "slow-lossy-links",
  "slow-server-partition",
] as const;

export interface FleetChaosOptions {
  readonly awayMs: number;
  readonly write: boolean;
  /** Only these scenarios, by name (a run of some writes no report). */
  readonly only?: readonly string[];
  readonly say: (line: string) => void;
}

/** Every network scenario, in order; how many failed a bar. */
export async function runFleetChaos(options: FleetChaosOptions): Promise<number> {
  const { say } = options;
  const startedAt = Date.now();
  const known: readonly string[] = SCENARIOS.filter(
    (n) => options.only === undefined || options.only.includes(n),
  );
  const shared = known.some((n) => !n.startsWith("slow-"));
  const fleet = shared
    ? await Fleet.start({ nodes: 3, servers: 3, say: (line) => say(`fleet: ${line}`) })
    : undefined;
  const results: NetFaultResult[] = [];
  // The slow scenarios run on a fleet of their own whose node links are slow from before the
  // nodes join, alone: the shared fleet is stopped first.
  let slow: Promise<Fleet> | undefined;
  const slowFleet = async () => {
    await fleet?.stop();
    slow ??= startSlowFleet({ nodes: 3, say: (line) => say(`slow fleet: ${line}`) });
    return slow;
  };
  type Run = () => Promise<NetFaultResult>;
  const scenarios: [string, (fleet: Fleet) => Promise<NetFaultResult>][] = [
    [
      "node-partition",
      (fleet) => nodePartition(fleet, { node: "n1", caller: "n2", awayMs: options.awayMs }),
    ],
    ["away-through-changes", (fleet) => awayThroughChanges(fleet, { node: "n2" })],
    ["server-partition", (fleet) => serverPartition(fleet, { node: "n3", awayMs: 30_000 })],
    ["minority-partition", (fleet) => minorityPartition(fleet, { writes: 10 })],
    [
      "server-kill-and-partition",
      (fleet) => serverKillAndPartition(fleet, { caller: "n2", counterNode: "n3", awayMs: 30_000 }),
    ],
    ["refused-joins", (fleet) => refusedJoins(fleet)],
  ];
  const runs: [string, Run][] = [
    ...(fleet === undefined ? [] : scenarios.map(([n, r]): [string, Run] => [n, () => r(fleet)])),
    [
      "slow-lossy-links",
      async () => slowLossyLinks(await slowFleet(), { caller: "n1", callee: "n2", callMs: 60_000 }),
    ],
    [
      "slow-server-partition",
      async () => slowServerPartition(await slowFleet(), { node: "n3", awayMs: 30_000 }),
    ],
  ];
  let bad = 0;
  try {
    for (const [name, run] of runs.filter(([n]) => known.includes(n))) {
      say(`${name} …`);
      const result = await run().catch((error: unknown): NetFaultResult => ({
        fault: name,
        what: "did not finish",
        failedCalls: 0,
        answeredCalls: 0,
        convergedMs: 0,
        lostWrites: 0,
        notes: [],
        wrong: [(error as Error).message.slice(0, 2_000)],
      }));
      results.push(result);
      if (result.wrong.length > 0) bad += 1;
      say(
        `${name}: ${result.notes.join("; ")}${result.wrong.length > 0 ? ` — WRONG: ${result.wrong.join("; ")}` : ""}`,
      );
    }
  } finally {
    await fleet?.stop();
    await (await slow?.catch(() => undefined))?.stop();
  }
  const table = fleetTable(results);
  const took = Math.round((Date.now() - startedAt) / 1000);
  say(`\n${table}\n\n${results.length - bad} held, ${bad} did not; ${took} s in all`);
  if (options.write && options.only === undefined) await writeReport(table, took);
  return bad;
}

/** The results as docs/reliability.md shows them. */
export function fleetTable(results: readonly NetFaultResult[]): string {
  return markdownTable(results, {
    scenario: (r) => r.fault,
    what: (r) => r.what,
    "failed calls": (r) => `${r.failedCalls} of ${r.failedCalls + r.answeredCalls}`,
    "converged after": (r) => `${(r.convergedMs / 1000).toFixed(1)} s`,
    "lost writes": (r) => String(r.lostWrites),
    measured: (r) => r.notes.join("; "),
    held: (r) => (r.wrong.length === 0 ? "yes" : `no: ${r.wrong.join("; ")}`),
  });
}

async function writeReport(table: string, took: number): Promise<void> {
  const doc = await readFile(REPORT, "utf8");
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) return;
  const stamp = `${new Date().toISOString().slice(0, 10)}, \`npm run chaos -- --fleet\`, accounts mode; the whole run took ${Math.round(took / 60)} min.`;
  await writeFile(
    REPORT,
    `${doc.slice(0, begin + BEGIN.length)}\n${stamp}\n\n${table}\n${doc.slice(end)}`,
  );
  spawnSync("npx", ["--no-install", "prettier", "--write", fileURLToPath(REPORT)], {
    stdio: "ignore",
  });
}
