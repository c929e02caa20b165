/**
 * A fleet-wide rollout at 1,000 simulated nodes (issue 22): the assigner's pure rules (core's
 * `assign`, every pass over the whole fleet, its writes applied as the shell applies them) and
 * 1,000 nodes on a virtual clock, each beating once a virtual second and reporting a build
 * healthy the second after it is wanted. Build 2 rolls out in batches of 10% after a canary,
 * each wave proven by 30 s of health; beside it, in the same run, the same fleet all at once
 * (`batch: 100%`). What waves add (virtual seconds until every node is wanted build 2) is set
 * against the gates' min-healthy times: the ratio should be at most 1.10. No bus: the gates'
 * latency on a real bus is one heartbeat interval (decision 0130), which this models with 1 s.
 *
 *   npm run build && npm run bench -- rollout
 */
import { assign, emptySnapshot, type AssignerSnapshot, type HaveRecord } from "@mesh/core";
import type { Build, Manifest, RolloutPolicy } from "@mesh/protocol";
const line = (text: string): void => console.log(text);

const NODES = Number(process.env["BENCH_NODES"] ?? 1_000);
const MIN_HEALTHY_S = 30;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const iso = (s: number): string => new Date(T0 + s * 1000).toISOString();

type Snap = { -readonly [K in keyof AssignerSnapshot]: AssignerSnapshot[K] } & {
  own: AssignerSnapshot["own"];
};

function buildOf(s: Snap, seq: number): string {
  const id = `${seq}-abcdef0${seq}`;
  const digest = String(seq).repeat(64);
  const manifest = {
    module: "hello",
    bundles: [],
    processes: [],
    states: [],
    reads: [],
    calls: [],
    config: {},
    "own-secrets": {},
  } as Manifest;
  (s.manifests as Map<string, Manifest>).set(digest, manifest);
  const build: Build = {
    module: "hello",
    build: id,
    status: "built",
    candidate: seq,
    manifestDigest: digest,
    bundles: [],
    log: "",
    timings: { started: iso(0) },
  };
  (s.builds as Map<string, Build>).set(`hello.${id}`, build);
  return id;
}

/** Applies a pass's writes to the snapshot's own maps, as the shell holds them. */
function apply(s: Snap, writes: ReturnType<typeof assign>["writes"]): void {
  const maps: Record<string, Map<string, unknown>> = {
    "mesh-wants": s.own.wants as Map<string, unknown>,
    "mesh-compositions": s.own.compositions as Map<string, unknown>,
    "mesh-differences": s.own.differences as Map<string, unknown>,
    "mesh-asks": s.own.asks as Map<string, unknown>,
    "mesh-rollouts": s.own.rollouts as Map<string, unknown>,
  };
  for (const w of writes) {
    const map = maps[w.bucket];
    if (map === undefined) continue;
    if (w.value === undefined) map.delete(w.key);
    else map.set(w.key, w.value);
  }
}

/** Seconds (virtual) from build 2 until every node is wanted it, and the wall time of the passes. */
function run(policy: RolloutPolicy): {
  seconds: number;
  waves: number;
  ms: number;
  passes: number;
} {
  const s = emptySnapshot(iso(0)) as Snap;
  const nodes = Array.from({ length: NODES }, (_, i) => `n${String(i).padStart(4, "0")}`);
  (s.assignments as Map<string, unknown>).set("all.hello", { by: "bench", at: iso(0) });
  (s.rolloutPolicies as Map<string, unknown>).set("hello", { policy, by: "bench", at: iso(0) });
  const beat = (t: number): void => {
    for (const n of nodes) {
      (s.presence as Map<string, unknown>).set(n, {
        node: n,
        facts: { hostname: n, os: "linux", arch: "x64", version: "0" },
        publicKey: "k",
        heartbeat: iso(t),
      });
    }
  };
  const reportWanted = (t: number): void => {
    for (const n of nodes) {
      const want = s.own.wants.get(`${n}.hello`);
      const key = `${n}.hello`;
      const record = s.have.get(key);
      if (want === undefined || record?.current?.build === want.build) continue;
      const have = {
        build: want.build,
        fingerprint: "f",
        health: "healthy" as const,
        since: iso(t),
        restarts: 0,
      };
      const next: HaveRecord = {
        current: have,
        history: [...(record?.history ?? []), have].slice(-8),
      };
      (s.have as Map<string, HaveRecord>).set(key, next);
    }
  };
  buildOf(s, 1);
  beat(0);
  apply(s, assign(s).writes);
  reportWanted(0);
  apply(s, assign(s).writes);
  const b2 = buildOf(s, 2);
  let ms = 0;
  let passes = 0;
  for (let t = 1; t < 10_000; t++) {
    s.now = iso(t);
    reportWanted(t);
    beat(t);
    const started = performance.now();
    const result = assign(s);
    ms += performance.now() - started;
    passes += 1;
    apply(s, result.writes);
    if (nodes.every((n) => s.own.wants.get(`${n}.hello`)?.build === b2)) {
      return { seconds: t, waves: s.own.rollouts.get("hello")?.wave ?? 0, ms, passes };
    }
  }
  throw new Error("the rollout did not complete in 10,000 virtual seconds");
}

const waves = run({ canary: 1, batch: "10%", "min-healthy": `${MIN_HEALTHY_S}s` });
const once = run({ batch: "100%" });
const gates = waves.waves - 1;
const added = waves.seconds - once.seconds;
const ratio = added / (gates * MIN_HEALTHY_S);
line(
  `nodes ${NODES}: waves of 10% after a canary, min-healthy ${MIN_HEALTHY_S}s, heartbeats every 1 s`,
);
line(
  `all at once: every node wanted build 2 after ${once.seconds} s (${once.passes} passes, ${(once.ms / once.passes).toFixed(1)} ms a pass)`,
);
line(
  `in waves: ${waves.waves} waves, every node wanted it after ${waves.seconds} s (${waves.passes} passes, ${(waves.ms / waves.passes).toFixed(1)} ms a pass)`,
);
line(
  `added ${added} s over ${gates} gates of ${MIN_HEALTHY_S} s = ${gates * MIN_HEALTHY_S} s: ratio ${ratio.toFixed(3)} (at most 1.10)`,
);
if (ratio > 1.1) {
  line("FAILED: waves add more than the gates' min-healthy times plus 10%");
  process.exitCode = 1;
}
