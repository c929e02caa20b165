/**
 * `npm run chaos`: the fault suite on a demo mesh of its own. Every fault, in an order drawn from
 * `--seed` (so a failing run replays), or only those named with `--faults a,b`. Prints a table and
 * writes it into docs/reliability.md between its markers; exits 1 when a fault left a duplicate
 * process, a changed record, a lost write, or failed calls where none may fail.
 *
 *   npm run chaos -- [--seed N] [--faults bus,group] [--rounds N] [--no-write]
 *   npm run chaos -- --fleet [--away SECONDS] [--faults node-partition,…] [--no-write]
 *
 * `--rounds N` runs the chosen faults N times (each round in its own seeded order). `--fleet` runs
 * the network scenarios on a fleet on namespaces instead (chaos-fleet.ts; needs root).
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort } from "@mesh/bus/testing";
import {
  FAULTS,
  mountSmallDisk,
  resultTable,
  runFault,
  shuffled,
  unmountSmallDisk,
  type FaultResult,
} from "./chaos.js";
import { DemoMesh } from "./demo-mesh.js";
import { runFleetChaos } from "./chaos-fleet.js";

const REPORT = new URL("../../../../docs/reliability.md", import.meta.url);
const BEGIN = "<!-- chaos:begin -->";
const END = "<!-- chaos:end -->";

const { values } = parseArgs({
  options: {
    seed: { type: "string" },
    faults: { type: "string" },
    rounds: { type: "string" },
    "no-write": { type: "boolean" },
    fleet: { type: "boolean" },
    away: { type: "string" },
  },
});
const named = values.faults?.split(",").filter((name) => name !== "");
if (values.fleet === true) {
  const bad = await runFleetChaos({
    awayMs: 1000 * Number(values.away ?? 300),
    write: values["no-write"] !== true,
    ...(named === undefined ? {} : { only: named }),
    say: (line) => process.stdout.write(`chaos: ${line}\n`),
  });
  process.exit(bad === 0 ? 0 : 1);
}
const seed = values.seed === undefined ? Date.now() % 100_000 : Number(values.seed);
const unknown = named?.filter((name) => !FAULTS.some((f) => f.name === name)) ?? [];
if (unknown.length > 0) {
  process.stderr.write(
    `chaos: no fault called ${unknown.join(", ")}; the faults are ${FAULTS.map((f) => f.name).join(", ")}\n`,
  );
  process.exit(2);
}
const chosen = FAULTS.filter((f) => named === undefined || named.includes(f.name));

const root = await mkdtemp(join(tmpdir(), "mesh-chaos-"));
const smallDisk = chosen.some((f) => f.name === "disk-full") && mountSmallDisk(root, 1024);
const rounds = Math.max(1, Math.min(100, Number(values.rounds ?? 1) || 1));
const faults = Array.from({ length: rounds }, (_, round) =>
  shuffled(
    chosen.filter((f) => f.name !== "disk-full" || smallDisk),
    seed + round,
  ),
).flat();
if (faults.length < chosen.length * rounds) {
  process.stdout.write("chaos: disk-full needs root to mount a small tmpfs; left out\n");
}
process.stdout.write(
  `chaos: seed ${seed}; faults in order: ${faults.map((f) => f.name).join(", ")}\n`,
);

const mesh = new DemoMesh({ root, port: await freePort(), node: "chaos-1" });
const results: FaultResult[] = [];
let bad = 0;
try {
  await mesh.up();
  for (const fault of faults) {
    process.stdout.write(`chaos: ${fault.what} …\n`);
    const result = await runFault(mesh, fault);
    results.push(result);
    const wrong =
      Object.keys(result.duplicates).length > 0 ||
      result.changed.length > 0 ||
      result.lostWrites > 0 ||
      (!fault.callsMayFail && result.failedCalls > 0);
    if (wrong) bad += 1;
    process.stdout.write(
      `chaos: ${fault.name}: ${result.failedCalls} failed calls, whole again after ${(result.backAfterMs / 1000).toFixed(1)} s` +
        `${wrong ? ` — WRONG: ${JSON.stringify(result)}` : ""}\n`,
    );
  }
} finally {
  await mesh.stop();
  if (smallDisk) unmountSmallDisk(root);
  await rm(root, { recursive: true, force: true });
}

const table = resultTable(results);
process.stdout.write(`\n${table}\n\n${results.length - bad} passed, ${bad} failed\n`);
if (values["no-write"] !== true && named === undefined) {
  const doc = await readFile(REPORT, "utf8");
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin >= 0 && end > begin) {
    const stamp = `Seed ${seed}, ${new Date().toISOString().slice(0, 10)}, \`npm run chaos -- --seed ${seed}\`.`;
    await writeFile(
      REPORT,
      `${doc.slice(0, begin + BEGIN.length)}\n${stamp}\n\n${table}\n${doc.slice(end)}`,
    );
    // The project's format check reads docs too: the table is aligned as Prettier aligns it.
    spawnSync("npx", ["--no-install", "prettier", "--write", fileURLToPath(REPORT)], {
      stdio: "ignore",
    });
  }
}
process.exit(bad === 0 ? 0 : 1);
