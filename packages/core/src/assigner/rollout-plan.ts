/**
 * A module's rollout, decided once per pass over the whole fleet before any cell (issue 22,
 * decision 0130). Everything is derived from buckets: the wants written before say which nodes
 * were given the build, `have` says how each runs it and since when, each node's heartbeat in
 * `mesh-presence` says what time it is on that node, and the assigner's own record in
 * `mesh-rollouts` says which nodes were admitted and which wave the next one waits for. No timer:
 * a gate holds once a heartbeat of every node of the wave comes `min-healthy` after the node
 * reported the build healthy (both times from that node's own clock).
 *
 * The waves and halt rules (./rules/waves.ts, ./rules/halt.ts) read the plan for their cells.
 */
import {
  nodeModuleKey,
  targetModuleKey,
  type ResolvedRolloutPolicy,
  type Rollout,
  type RolloutSteer,
} from "@mesh/protocol";
import { liftedAt, marksOf, type ModuleIndex, type RolloutPlan, type Usable } from "./model.js";
import { orderNodes, resolveRolloutPolicy } from "./rollout-policy.js";
import { gateHolds, notStarted, runOnNode, stepWaves, wavesOf, type NodeRun } from "./wave-step.js";
import type { AssignerSnapshot } from "./snapshot.js";

export type { RolloutPlan };

interface Ctx {
  readonly snapshot: AssignerSnapshot;
  readonly module: string;
  readonly target: Usable;
  readonly idx: ModuleIndex;
  readonly nodes: readonly string[];
  readonly policy: ResolvedRolloutPolicy;
  readonly steer: RolloutSteer | undefined;
}

/** Every module's plan, keyed by module; a module with no build or no node has none. */
export function planRollouts(
  snapshot: AssignerSnapshot,
  index: ReadonlyMap<string, ModuleIndex>,
): Map<string, RolloutPlan> {
  const out = new Map<string, RolloutPlan>();
  const placed = placedNodes(snapshot);
  for (const [module, idx] of [...index].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const target = targetOf(snapshot, module, idx);
    const nodes = (placed.get(module) ?? []).filter(
      (n) => !snapshot.puts.has(nodeModuleKey(n, module)),
    );
    if (target === undefined || nodes.length === 0) continue;
    const build = target.build.build;
    const steer = snapshot.rolloutSteers.get(module);
    const policy = resolveRolloutPolicy({
      override: snapshot.rolloutPolicies.get(module)?.policy,
      manifest: target.manifest.rollout,
      nodes: nodes.length,
    });
    const ordered = orderNodes(nodes, policy.order, build, snapshot.presence);
    const ctx: Ctx = {
      snapshot,
      module,
      target,
      idx,
      nodes: ordered,
      policy,
      steer: steer?.build === build ? steer : undefined,
    };
    out.set(module, planOne(ctx));
  }
  return out;
}

/** The build a rollout brings: a put to every node, else the newest. */
function targetOf(
  snapshot: AssignerSnapshot,
  module: string,
  idx: ModuleIndex,
): Usable | undefined {
  const all = snapshot.puts.get(targetModuleKey({ all: true }, module));
  return (all === undefined ? undefined : idx.usable.get(all.build)) ?? idx.newest;
}

/** The present nodes each module is placed on, sorted. */
export function placedNodes(snapshot: AssignerSnapshot): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  const add = (module: string, node: string): void => {
    if (!snapshot.presence.has(node)) return;
    const set = out.get(module) ?? new Set<string>();
    set.add(node);
    out.set(module, set);
  };
  for (const key of snapshot.assignments.keys()) {
    const dot = key.indexOf(".");
    const [target, module] = [key.slice(0, dot), key.slice(dot + 1)];
    if (target === "all") for (const n of snapshot.presence.keys()) add(module, n);
    else add(module, target);
  }
  return new Map([...out].map(([m, s]) => [m, [...s].sort()]));
}

function planOne(ctx: Ctx): RolloutPlan {
  const { snapshot, module, target } = ctx;
  const build = target.build.build;
  const before = snapshot.own.rollouts.get(module);
  const given = new Set(ctx.nodes.filter((n) => wantOf(ctx, n) === build));
  const holdable = new Set(ctx.nodes.filter((n) => !given.has(n) && holdOf(ctx, n) !== undefined));
  let record = before?.build === build ? before : fresh(ctx, holdable, before);
  // With no record, every node already given the build or with nothing to keep (a first
  // deploy, a mesh from before waves): nothing rolls out, the build is simply there.
  if (before === undefined && holdable.size === 0) record = { ...record, status: "done" };
  if (record.status === "failed" || record.status === "aborted") {
    // A retry of this attempt, written after it halted (a retry the halt found stays spent).
    const retry =
      ctx.steer?.action === "retry" &&
      ctx.steer.attempt === record.attempt &&
      ctx.steer.at !== record.failed?.steerAt;
    if (!retry) return halted(ctx, { ...record, policy: ctx.policy });
    record = { ...fresh(ctx, holdable, record), attempt: record.attempt + 1 };
  }
  if (ctx.steer?.action === "abort") {
    const by = ctx.steer.by;
    const failed = {
      reason: `aborted by ${by}`,
      nodes: [...given].sort().map((node) => ({ node, error: "aborted" })),
      steerAt: ctx.steer.at,
    };
    return halted(ctx, { ...record, status: "aborted", failed, policy: ctx.policy });
  }
  // Admitted: what the record admitted, every node already given it, and every node with no
  // build of its own to keep (it loses nothing by running the new one).
  const free = ctx.nodes.filter((n) => !given.has(n) && !holdable.has(n));
  const admitted = new Set(
    [...record.admitted, ...given, ...free].filter((n) => ctx.nodes.includes(n)),
  );
  // Once done, a node that fails later is set back on its own (rule set-back): the rollout is over.
  if (record.status === "done") return advance(ctx, record, admitted, true);
  const runs = new Map([...admitted].map((n) => [n, runOf(ctx, record, n)]));
  const failing = [...runs].filter(([, r]) => r.kind === "failing");
  if (failing.length > ctx.policy.maxFailing) return failedPlan(ctx, record, admitted, failing);
  // The gate: the last wave, and any node given the build that the record did not admit (a
  // record write lost), each proven (or failing within the tolerance).
  const gate = [...record.waveNodes, ...[...given].filter((n) => !record.admitted.includes(n))];
  return advance(ctx, record, admitted, gateHolds(gate, runs));
}

/** A new rollout of the target: nothing admitted yet. */
function fresh(ctx: Ctx, holdable: ReadonlySet<string>, before: Rollout | undefined): Rollout {
  const from = new Set<string>();
  for (const n of holdable) from.add(holdOf(ctx, n) as string);
  return {
    module: ctx.module,
    build: ctx.target.build.build,
    from: [...from].sort(),
    attempt: before?.build === ctx.target.build.build ? before.attempt : 1,
    ...notStarted(ctx.policy, ctx.snapshot.now),
  };
}

/** Gives the next wave when the gate held, or says what it waits for. */
function advance(ctx: Ctx, record: Rollout, admitted: Set<string>, held: boolean): RolloutPlan {
  const { module } = ctx;
  const { record: next, pending } = stepWaves(
    {
      nodes: ctx.nodes,
      policy: ctx.policy,
      steer: ctx.steer,
      now: ctx.snapshot.now,
      subject: ctx.target.build.build,
      command: (word) => `mesh rollout ${word} ${module}`,
    },
    record,
    admitted,
    held,
  );
  const waveOf = wavesOf(pending, next, ctx.policy.batch);
  return { nodes: ctx.nodes, record: next, allowed: admitted, waveOf, halted: false };
}

function failedPlan(
  ctx: Ctx,
  record: Rollout,
  admitted: ReadonlySet<string>,
  failing: ReadonlyArray<readonly [string, NodeRun]>,
): RolloutPlan {
  const nodes = failing.map(([node, r]) => ({ node, error: r.kind === "failing" ? r.error : "" }));
  const tolerance =
    ctx.policy.maxFailing === 0 ? "" : ` (more than ${ctx.policy.maxFailing} may not)`;
  const reason = `${nodes.map((n) => `${n.node}: ${n.error}`).join("; ")}${tolerance}`;
  return halted(ctx, {
    ...record,
    status: "failed",
    admitted: [...admitted].sort(),
    policy: ctx.policy,
    failed: { reason, nodes, ...(ctx.steer === undefined ? {} : { steerAt: ctx.steer.at }) },
  });
}

function halted(ctx: Ctx, record: Rollout): RolloutPlan {
  const waiting = `nothing: halted; once fixed, \`mesh rollout retry ${ctx.module}\`, or a new build`;
  return {
    nodes: ctx.nodes,
    record: { ...record, waiting },
    allowed: new Set(),
    waveOf: new Map(),
    halted: true,
  };
}

/** How one admitted node runs the build (decision 0130); a build marked failing there fails. */
function runOf(ctx: Ctx, record: Rollout, node: string): NodeRun {
  const { snapshot, module } = ctx;
  const build = ctx.target.build.build;
  const key = nodeModuleKey(node, module);
  const have = snapshot.have.get(key);
  const current = have?.current;
  if (marksOf(have, liftedAt(snapshot, key, targetModuleKey({ all: true }, module))).has(build)) {
    return { kind: "failing", error: current?.lastError ?? "reported failing" };
  }
  const since = Date.parse(current?.since ?? "");
  return runOnNode({
    policy: ctx.policy,
    record,
    node,
    presence: snapshot.presence.get(node),
    run:
      current?.build === build ? { ...current, healthySince: since, startedAt: since } : undefined,
    late: "not healthy",
  });
}

/** The build the assigner wanted on a node before this pass. */
function wantOf(ctx: Ctx, node: string): string | undefined {
  return ctx.snapshot.own.wants.get(nodeModuleKey(node, ctx.module))?.build;
}

/** The build a node not yet reached keeps: its previous want, when usable and not marked failing. */
function holdOf(ctx: Ctx, node: string): string | undefined {
  const build = wantOf(ctx, node);
  if (build === undefined || build === ctx.target.build.build) return undefined;
  if (!ctx.idx.usable.has(build)) return undefined;
  const key = nodeModuleKey(node, ctx.module);
  const lifted = liftedAt(ctx.snapshot, key, targetModuleKey({ all: true }, ctx.module));
  return marksOf(ctx.snapshot.have.get(key), lifted).has(build) ? undefined : build;
}
