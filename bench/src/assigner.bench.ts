/**
 * The assigner's rules over a fleet of 10,000 nodes × 20 modules (every module assigned to all,
 * two builds each, every node present and healthy): a full pass as wants decided per second, and
 * one change in that fleet (one node's have, one node's put, one module's new build placed on
 * ten nodes) as the time of the pass it causes. The baseline is building the map of 200,000 want
 * keys in the same run: the least any full pass must do.
 */
import { createHash } from "node:crypto";
import { assign, canonicalJson, emptySnapshot, type AssignerSnapshot } from "@mesh/core";
import type { Build, Have, Manifest, Want } from "@mesh/protocol";
import { line, perSecond, quantile, timeEach } from "./measure.js";

const NODES = 10_000;
const MODULES = 20;
const T0 = "2026-01-01T00:00:00.000Z";
const hex = (s: string): string => createHash("sha256").update(s).digest("hex");

type Maps = { -readonly [K in keyof AssignerSnapshot]: AssignerSnapshot[K] };

function fleet(): Maps {
  const s = emptySnapshot(T0) as unknown as Maps & Record<string, Map<string, unknown>>;
  const maps = s as unknown as Record<string, Map<string, unknown>>;
  for (let m = 0; m < MODULES; m++) {
    const module = `mod-${m}`;
    maps["registrations"]?.set(module, {
      module,
      source: { kind: "directory", path: `/src/${module}` },
      by: "ada",
      at: T0,
    });
    maps["assignments"]?.set(`all.${module}`, { by: "ada", at: T0 });
    for (const seq of [1, 2]) addBuild(s, module, seq);
  }
  for (let n = 0; n < NODES; n++) {
    const node = `node-${n}`;
    maps["presence"]?.set(node, {
      node,
      facts: { hostname: node, os: "linux", arch: "x64", version: "0.1.0" },
      publicKey: "k",
      heartbeat: T0,
    });
  }
  return s;
}

function addBuild(s: Maps, module: string, seq: number, extra: Partial<Manifest> = {}): string {
  const id = `${seq}-${hex(module + seq).slice(0, 8)}`;
  const manifest: Manifest = {
    module,
    bundles: [
      {
        name: "tools",
        language: "typescript",
        entrypoints: ["src/tools.ts"],
        loads: ["src/tools.ts"],
        digest: hex(`${module}${seq}`),
        size: 1,
      },
    ],
    processes: [],
    states: [],
    reads: [],
    calls: [],
    config: {},
    "own-secrets": {},
    ...extra,
  };
  const manifestDigest = hex(canonicalJson(manifest));
  (s.manifests as Map<string, Manifest>).set(manifestDigest, manifest);
  const build: Build = {
    module,
    build: id,
    status: "built",
    candidate: seq,
    manifestDigest,
    bundles: [{ name: "tools", digest: hex(`${module}${seq}`), size: 1 }],
    log: "",
    timings: { started: T0 },
  };
  (s.builds as Map<string, Build>).set(`${module}.${id}`, build);
  return id;
}

/** Applies a pass's writes to the snapshot's own buckets, as the shell does. */
function apply(s: Maps, writes: ReturnType<typeof assign>["writes"]): void {
  const own = s.own as unknown as Record<string, Map<string, unknown>>;
  const byBucket: Record<string, Map<string, unknown> | undefined> = {
    "mesh-wants": own["wants"],
    "mesh-compositions": own["compositions"],
    "mesh-differences": own["differences"],
    "mesh-asks": own["asks"],
  };
  for (const w of writes) {
    const map = byBucket[w.bucket] as Map<string, unknown>;
    if (w.value === undefined) map.delete(w.key);
    else map.set(w.key, w.value);
  }
}

const s = fleet();

// Baseline: a map of every want key, the least a full pass does.
const [baselineMs] = await timeEach(1, () => {
  const m = new Map<string, Want | undefined>();
  for (let n = 0; n < NODES; n++)
    for (let k = 0; k < MODULES; k++) m.set(`node-${n}.mod-${k}`, undefined);
});

let decided = 0;
const [fullMs] = await timeEach(1, () => {
  const result = assign(s);
  decided = result.wants.size;
  apply(s, result.writes);
});
console.log(
  line("full pass, 10,000 nodes x 20 modules", perSecond(decided, fullMs ?? 1), "wants decided/s", {
    what: "want keys made/s",
    value: perSecond(NODES * MODULES, baselineMs ?? 1),
  }),
);
console.log(
  `  (${decided} wants in ${(fullMs ?? 0).toFixed(0)} ms; baseline ${(baselineMs ?? 0).toFixed(1)} ms)`,
);

const [secondMs] = await timeEach(1, () => {
  const r = assign(s);
  if (r.writes.length !== 0) throw new Error(`a second full pass wrote ${r.writes.length}`);
});
console.log(
  `  a second full pass over the same fleet writes nothing: ${(secondMs ?? 0).toFixed(0)} ms`,
);

// One change: the nodes it touches, as the shell scopes them.
const have = s.have as Map<string, { current: Have | undefined; history: Have[] }>;
const oneNode = await timeEach(20, (i) => {
  const node = `node-${i}`;
  const h: Have = {
    build: "2-x",
    fingerprint: "f",
    health: "healthy",
    since: T0,
    restarts: i,
    lastError: `e${i}`,
  };
  have.set(`${node}.mod-0`, { current: h, history: [h] });
  apply(s, assign(s, { nodes: [node] }).writes);
});
console.log(
  line("one node's have changes: its pass (p50)", quantile(oneNode, 0.5), "ms", {
    what: "full pass",
    value: fullMs ?? 1,
  }),
);

// One module's new build, placed (by node assignments) on ten nodes only.
const tenNodes = Array.from({ length: 10 }, (_, i) => `node-${100 + i}`);
for (const n of tenNodes)
  (s.assignments as Map<string, unknown>).set(`${n}.mod-extra`, { by: "ada", at: T0 });
addBuild(s, "mod-extra", 1);
apply(s, assign(s, { nodes: tenNodes }).writes);
const newBuild = await timeEach(5, (i) => {
  addBuild(s, "mod-extra", 2 + i);
  const r = assign(s, { nodes: tenNodes });
  apply(s, r.writes);
});
console.log(
  line("a new build of a module on 10 nodes: its pass (p50)", quantile(newBuild, 0.5), "ms", {
    what: "full pass",
    value: fullMs ?? 1,
  }),
);
