/**
 * Snapshots for the assigner's tests (not exported from the package): a small mesh built up
 * step by step, with readable build ids and digests.
 */
import { createHash } from "node:crypto";
import type {
  Build,
  Have,
  Manifest,
  ManifestInput,
  RolloutPolicy,
  Rule,
  Want,
} from "@mesh/protocol";
import { Manifest as ManifestSchema } from "@mesh/protocol";
import { canonicalJson } from "../fingerprint.js";
import { emptySnapshot, type AssignerSnapshot, type HaveRecord } from "./snapshot.js";
import { assign, type AssignResult } from "./assign.js";
import { cellOf, indexModules, type Cell, type Decision } from "./model.js";
import { planRollouts } from "./rollout-plan.js";

export const T0 = "2026-01-01T00:00:00.000Z";

const hex = (text: string): string => createHash("sha256").update(text).digest("hex");

type Mutable<T> = {
  -readonly [K in keyof T]: T[K] extends ReadonlyMap<infer A, infer B> ? Map<A, B> : T[K];
};

export interface MutableSnapshot extends Omit<Mutable<AssignerSnapshot>, "own"> {
  own: Mutable<AssignerSnapshot["own"]>;
}

export function snapshot(): MutableSnapshot {
  const s = emptySnapshot(T0);
  return s as unknown as MutableSnapshot;
}

export function present(
  s: MutableSnapshot,
  node: string,
  facts: { account?: string; adopted?: boolean; root?: string } = {},
): void {
  s.presence.set(node, {
    node,
    facts: { hostname: node, os: "linux", arch: "x64", version: "0.1.0", ...facts },
    publicKey: "k",
    heartbeat: T0,
  });
}

export function assignTo(s: MutableSnapshot, target: string, module: string): void {
  s.assignments.set(`${target}.${module}`, { by: "ada", at: T0 });
}

/** A module manifest with one tools bundle; `extra` adds reads, calls and secrets. */
export function manifestOf(
  module: string,
  seq: number,
  extra: Partial<ManifestInput> = {},
): Manifest {
  return ManifestSchema.parse({
    module,
    bundles: [
      {
        name: "tools",
        language: "typescript",
        entrypoints: ["src/tools.ts"],
        loads: ["src/tools.ts"],
        digest: hex(`${module}-${seq}-tools`),
        size: 100,
      },
    ],
    ...extra,
  });
}

/** Adds a candidate and its build; a built one with its manifest stored. Returns the build id. */
export function build(
  s: MutableSnapshot,
  module: string,
  seq: number,
  options: { status?: Build["status"]; manifest?: Manifest } = {},
): string {
  const status = options.status ?? "built";
  const id = `${seq}-${hex(`${module}${seq}`).slice(0, 8)}`;
  const manifest = options.manifest ?? manifestOf(module, seq);
  const manifestDigest = hex(canonicalJson(manifest));
  s.candidates.set(`${module}.${seq}`, {
    module,
    seq,
    revision: `r${seq}`,
    sourceDigest: hex(`src${module}${seq}`),
    at: T0,
  });
  s.builds.set(`${module}.${id}`, {
    module,
    build: id,
    status,
    candidate: seq,
    ...(status === "built" ? { manifestDigest } : {}),
    bundles:
      status === "built"
        ? manifest.bundles.map((b) => ({ name: b.name, digest: b.digest as string, size: 100 }))
        : [],
    ...(status === "failed" ? { error: "compile error" } : {}),
    log: "",
    timings: { started: T0 },
  });
  if (status === "built") s.manifests.set(manifestDigest, manifest);
  return id;
}

export function reportHave(
  s: MutableSnapshot,
  node: string,
  module: string,
  build: string,
  health: Have["health"],
  extra: { since?: string; lastError?: string; config?: Have["config"] } = {},
): void {
  const key = `${node}.${module}`;
  const have: Have = { build, fingerprint: "f", health, since: T0, restarts: 0, ...extra };
  const record: HaveRecord = s.have.get(key) ?? { current: undefined, history: [] };
  haveRevision += 1;
  s.have.set(key, {
    current: have,
    history: [...record.history, { ...have, revision: haveRevision }],
  });
}

/** The revisions reports get, as mesh-have's stream numbers them (one sequence for every key). */
let haveRevision = 0;

/** The revision of the last report, as `mesh retry` reads it. */
export const lastHaveRevision = (): number => haveRevision;

/** An operator's retry of a module on a node or `all`, lifting every report so far. */
export function retry(s: MutableSnapshot, target: string, module: string): void {
  s.retries.set(`${target}.${module}`, { haveRevision, by: "ada", why: "fixed", at: T0 });
}

export function put(s: MutableSnapshot, target: string, module: string, buildId: string): void {
  s.puts.set(`${target}.${module}`, { build: buildId, by: "ada", why: "pinned", at: T0 });
}

/** Applies a pass's writes to the snapshot's own buckets, as the shell's watches would. */
export function apply(s: MutableSnapshot, result: AssignResult): void {
  for (const w of result.writes) {
    const map = {
      "mesh-wants": s.own.wants,
      "mesh-compositions": s.own.compositions,
      "mesh-differences": s.own.differences,
      "mesh-asks": s.own.asks,
      "mesh-rollouts": s.own.rollouts,
      "mesh-config": s.own.config,
      "mesh-config-waves": s.own.configWaves,
    }[w.bucket] as Map<string, unknown>;
    if (w.value === undefined) map.delete(w.key);
    else map.set(w.key, w.value);
  }
  for (const c of result.conditions) {
    if (c.resolved === true) s.own.conditions.delete(c.name);
    else if (c.node !== undefined) s.own.conditions.set(c.name, { node: c.node });
  }
}

/** A pass, its writes applied and its conditions held, as the shell leaves them. */
export function pass(s: MutableSnapshot, nodes?: string[]): AssignResult {
  const result = assign(s, nodes === undefined ? {} : { nodes });
  apply(s, result);
  return result;
}

/**
 * A snapshot with `nodes` present and hello assigned to every node, rolled out all at once
 * (`batch: 100%`): the tests that use it are of the per-node rules; waves have their own.
 */
export function helloEverywhere(...nodes: string[]): MutableSnapshot {
  const s = snapshot();
  for (const node of nodes) present(s, node);
  assignTo(s, "all", "hello");
  allAtOnce(s, "hello");
  return s;
}

/** hello everywhere on `nodes` (n1 first): n1 ran build 1 healthy, and build 2 is built. */
export function newBuildAfterHealthy(...nodes: string[]): {
  s: MutableSnapshot;
  b1: string;
  b2: string;
} {
  const s = helloEverywhere(...nodes);
  const b1 = build(s, "hello", 1);
  reportHave(s, "n1", "hello", b1, "healthy");
  const b2 = build(s, "hello", 2);
  return { s, b1, b2 };
}

/** An operator's rollout policy for a module: every node at once, as before waves. */
export function allAtOnce(s: MutableSnapshot, module: string): void {
  setPolicy(s, module, { batch: "100%" });
}

/** An operator's rollout policy for a module (`mesh rollout set`); none keeps the mesh's default. */
export function setPolicy(s: MutableSnapshot, module: string, policy?: RolloutPolicy): void {
  if (policy !== undefined) s.rolloutPolicies.set(module, { policy, by: "ada", at: T0 });
}

export function wantOf(result: AssignResult, node: string, module: string): Want | undefined {
  return result.wants.get(`${node}.${module}`);
}

/** The facts of one cell, as a rule reads them. */
export function cellIn(s: MutableSnapshot, node: string, module: string): Cell {
  const index = indexModules(s);
  return cellOf(s, index, node, module, `all.${module}`, planRollouts(s, index));
}

/** A decision that wants one build by a rule, for a rule's table. */
export function wanting(s: MutableSnapshot, module: string, id: string, rule: Rule): Decision {
  const usable = indexModules(s).get(module)?.usable.get(id);
  if (usable === undefined) throw new Error(`${module} ${id} is not usable`);
  return { kind: "want", proposal: { usable, rule, reason: `${rule} ${id}` } };
}

/** What a decision comes to, for a table's expectations: `want <rule> <build>`, `none <rule>`, `open`. */
export function outcome(d: Decision): string {
  if (d.kind === "want") return `want ${d.proposal.rule} ${d.proposal.usable.build.build}`;
  if (d.kind === "none") return `none ${d.unwanted.rule}`;
  return "open";
}

/** An instant `seconds` after T0. */
export const after = (seconds: number): string =>
  new Date(Date.parse(T0) + seconds * 1000).toISOString();

/** A node's heartbeat at an instant: the time the rollout's gates read on that node. */
export function beat(s: MutableSnapshot, node: string, at: string): void {
  const p = s.presence.get(node);
  if (p !== undefined) s.presence.set(node, { ...p, heartbeat: at });
}

/** A fleet with a clock every node's heartbeat follows, for the rollout tests. */
export interface ClockedFleet {
  readonly s: MutableSnapshot;
  readonly nodes: readonly string[];
  /** Seconds since T0. */
  clock: number;
}

/** A snapshot with nodes n1…n`count` present and hello assigned to every node. */
export function helloOn(count: number): { s: MutableSnapshot; nodes: string[] } {
  const s = snapshot();
  const nodes = Array.from({ length: count }, (_, i) => `n${i + 1}`);
  for (const n of nodes) present(s, n);
  assignTo(s, "all", "hello");
  return { s, nodes };
}

/**
 * Moves the fleet's clock by `seconds` and beats every node at the new instant, which the
 * assigner's clock (it stamps a wave's time) reads too. Returns that instant.
 */
export function tick(f: ClockedFleet, seconds: number): string {
  f.clock += seconds;
  const now = after(f.clock);
  f.s.now = now;
  for (const n of f.nodes) beat(f.s, n, now);
  return now;
}

/** The snapshot with every map filled in the opposite order (order independence properties). */
export function reversed(s: MutableSnapshot): MutableSnapshot {
  const flip = (v: unknown): unknown => (v instanceof Map ? new Map([...v].reverse()) : v);
  const out = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, flip(v)]));
  const own = Object.fromEntries(Object.entries(s.own).map(([k, v]) => [k, flip(v)]));
  return { ...out, own } as unknown as MutableSnapshot;
}
