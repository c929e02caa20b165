/**
 * Composition at fleet scale, as the controller does it (Fleet index + planNode: core's compose,
 * grants, provision data, the fingerprint), without the bus and without sealing:
 * - composing 10,000 nodes × 20 modules, as nodes per second, against JSON.stringify + SHA-256 of
 *   the same inputs (the least any composition must do: read every byte once);
 * - one node's recomposition after one want changes, at 100, 1,000 and 10,000 nodes, against
 *   planning one node of the same fleet directly: the ratio must stay flat as the fleet grows.
 */
import { createHash } from "node:crypto";
import { checkManifest, fingerprintOf } from "@mesh/core";
import { generateNodeKeys } from "@mesh/bus";
import { Fleet, planNode, type PlanContext } from "@mesh/controller";
import type { Manifest, ManifestInput, Want } from "@mesh/protocol";
import { line, perSecond, quantile, timeEach } from "./measure.js";

const MODULES = 20;
const BIG_FLEET = 10_000;
const FLEETS = [100, 1_000, 10_000];
const CHANGES = 200;

function manifest(input: ManifestInput): Manifest {
  const check = checkManifest(input);
  if (!check.ok) throw new Error(JSON.stringify(check.problems));
  return check.manifest;
}

const digest = (i: number): string => (i + 1).toString(16).padStart(2, "0").repeat(32);

/** 19 modules with a daemon, tools, states, reads and calls, and the runtime. */
function modules(build = 0): Manifest[] {
  const out: Manifest[] = [
    manifest({
      module: "node-tools",
      bundles: [
        {
          name: "runtime",
          language: "typescript",
          entrypoints: ["src/main.ts"],
          digest: digest(99),
        },
      ],
      "own-secrets": { broker: { path: "broker.json" } },
    }),
  ];
  for (let i = 1; i < MODULES; i++) {
    const name = `m${i}`;
    out.push(
      manifest({
        module: name,
        description: `module ${i} build ${build}`,
        bundles: [
          {
            name: "daemon",
            language: "typescript",
            entrypoints: ["src/daemon.ts"],
            digest: digest(i),
          },
          {
            name: "tools",
            language: "typescript",
            entrypoints: ["src/tools.ts"],
            loads: ["src/tools.ts"],
            digest: digest(i + 30),
          },
        ],
        processes: [{ name: "daemon", bundle: "daemon", env: { LEVEL: "info" } }],
        states: [{ name: "data", readable: true }],
        reads: i > 1 ? [`m${i - 1}/data`] : [],
        calls: i > 1 ? [`m${i - 1}/get`] : [],
        config: { step: { default: i } },
        "own-secrets": {
          broker: { path: "broker.json" },
          token: { path: "token" },
        },
      }),
    );
  }
  return out;
}

const wantOf = (m: Manifest, build: string): Want => ({
  build,
  manifestDigest: fingerprintOf(m),
  fingerprint: "f",
  rule: "newest",
  reason: "newest",
});

function fleetOf(nodes: number, manifests: readonly Manifest[]): Fleet {
  const fleet = new Fleet();
  for (const m of manifests) fleet.setManifest(fingerprintOf(m), { ok: true, manifest: m });
  const key = generateNodeKeys().publicKey;
  const heartbeat = new Date(0).toISOString();
  for (let n = 0; n < nodes; n++) {
    const node = `n${n}`;
    fleet.setPresence(node, {
      node,
      facts: { hostname: node, os: "linux", arch: "x64", version: "0.1.0" },
      publicKey: key,
      heartbeat,
    });
    for (const m of manifests) fleet.setWant(`${node}.${m.module}`, wantOf(m, "1-a"));
  }
  return fleet;
}

const context = (fleet: Fleet): PlanContext => ({
  servers: ["nats://127.0.0.1:4222"],
  artifactStore: "mesh-artifacts",
  ownerStates: (m) => fleet.ownerStates(m),
});

/** What the controller does per dirty node, minus sealing and the bus. */
function composeNode(fleet: Fleet, node: string, ctx: PlanContext): string {
  const plan = planNode(fleet.inputsOf(node), ctx);
  if (!plan.ok) throw new Error(JSON.stringify(plan.refusals));
  return fingerprintOf({ resources: plan.resources, modules: plan.modules });
}

/** A full collection when run with --expose-gc (bench/run.js does). */
const collect = (): void => (globalThis as { gc?: () => void }).gc?.();

async function main(): Promise<void> {
  const manifests = modules();
  const fleet = fleetOf(BIG_FLEET, manifests);
  const ctx = context(fleet);
  const nodes = fleet.takeDirty();

  // Baseline: read every node's inputs once, as bytes, and digest them.
  const [baselineMs] = await timeEach(1, () => {
    for (const node of nodes) {
      const inputs = fleet.inputsOf(node);
      const data = { presence: inputs.presence, wanted: [...inputs.wanted.values()] };
      createHash("sha256").update(JSON.stringify(data)).digest("hex");
    }
  });
  const [composeMs] = await timeEach(1, () => {
    for (const node of nodes) composeNode(fleet, node, ctx);
  });
  console.log(
    line(
      `composing ${BIG_FLEET} nodes × ${MODULES} modules`,
      perSecond(nodes.length, composeMs!),
      "nodes/s",
      {
        what: "JSON.stringify + SHA-256 of the same inputs",
        value: perSecond(nodes.length, baselineMs!),
      },
    ),
  );

  const newer = modules(1);
  const ratios: number[] = [];
  for (const size of FLEETS) {
    const f = size === BIG_FLEET ? fleet : fleetOf(size, manifests);
    f.takeDirty();
    const c = context(f);
    // Each change: one node's want of m3 moves to another build (and back), then the controller's
    // step: take the dirty nodes, compose each.
    // The newer build's manifest is stored once, as the builder writes it once.
    f.setManifest(fingerprintOf(newer[3]!), { ok: true, manifest: newer[3]! });
    f.takeDirty();
    const wantNewer = wantOf(newer[3]!, "2-b");
    const wantOlder = wantOf(manifests[3]!, "1-a");
    const onNewer = new Set<string>();
    // Garbage from building the fleet (and, at 10,000, from composing it whole) is collected
    // before measuring, so a collection it owes does not land on the change being measured.
    collect();
    const changed = await timeEach(CHANGES, (i) => {
      const node = `n${(i * 7919) % size}`;
      const toNewer = !onNewer.has(node);
      if (toNewer) onNewer.add(node);
      else onNewer.delete(node);
      f.setWant(`${node}.m3`, toNewer ? wantNewer : wantOlder);
      const dirty = f.takeDirty();
      if (dirty.length !== 1) throw new Error(`one want moved ${dirty.length} nodes`);
      for (const d of dirty) composeNode(f, d, c);
    });
    collect();
    const direct = await timeEach(CHANGES, (i) => {
      composeNode(f, `n${(i * 7919) % size}`, c);
    });
    const median = quantile(changed, 0.5);
    const base = quantile(direct, 0.5);
    ratios.push(median / base);
    console.log(
      line(`one want changed, recomposition, ${size} nodes (median)`, median, "ms", {
        what: "planning one node directly",
        value: base,
      }),
    );
  }
  console.log(
    `recomposition ratio at ${FLEETS.at(-1)} nodes over ${FLEETS[0]} nodes: ${(ratios.at(-1)! / ratios[0]!).toFixed(2)} (flat is ~1)`,
  );
}

await main();
