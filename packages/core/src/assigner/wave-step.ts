/**
 * One step of a rollout's waves, whatever moves through them: a build (./rollout-plan.ts) or a
 * config value (./config-rollout-plan.ts). Given the nodes in the order the rollout reaches them,
 * the nodes admitted so far and whether the last wave's gate held, it gives the next wave (the
 * canary first, then a batch at a time), or says what the rollout waits for: a pause, the
 * policy's pause after the canary, or the gate. Pure; the record changes only at a step.
 */
import type { Presence, ResolvedRolloutPolicy, RolloutStatus, WaveRecord } from "@mesh/protocol";
import { durationText } from "./rollout-policy.js";

/** The wave fields of a new rollout: rolling, nothing admitted yet. */
export function notStarted(policy: ResolvedRolloutPolicy, now: string): WaveRecord {
  return {
    status: "rolling",
    wave: 0,
    waves: 0,
    admitted: [],
    waveNodes: [],
    waveAt: now,
    policy,
    waiting: "",
  };
}

export interface WaveInput {
  /** Every node the rollout reaches, in the order it reaches them. */
  readonly nodes: readonly string[];
  readonly policy: ResolvedRolloutPolicy;
  /** The operator's last word on this rollout, when it has one. */
  readonly steer: { readonly action: string; readonly by: string } | undefined;
  /** The assigner's clock: stamps a wave given (never a gate). */
  readonly now: string;
  /** What moves, as the reasons name it: `build 3-9f2c1a7e`, `greeting="Hi"`. */
  readonly subject: string;
  /** The command an operator types to resume or promote this rollout. */
  readonly command: (word: "resume" | "promote") => string;
}

/** The record after the step, and the nodes still to be reached, in order. */
export interface WaveStep<R extends WaveRecord> {
  readonly record: R;
  readonly pending: readonly string[];
}

/**
 * Gives the next wave when the gate held (or on promote), or says what it waits for. `admitted`
 * is the nodes allowed so far; it gains the nodes of a wave given.
 */
export function stepWaves<R extends WaveRecord>(
  input: WaveInput,
  record: R,
  admitted: Set<string>,
  gateHeld: boolean,
): WaveStep<R> {
  const { policy, steer } = input;
  let held = gateHeld;
  let pending = input.nodes.filter((n) => !admitted.has(n));
  let next: R = { ...record, policy, admitted: [...admitted].sort() };
  const promoted = steer?.action === "promote";
  const canaryProven = record.wave === 1 && policy.canary > 0 && policy.pauseAfterCanary;
  const resumed = steer?.action === "resume" || promoted;
  const paused = steer?.action === "pause";
  if (pending.length > 0 && (promoted || (held && !paused && !(canaryProven && !resumed)))) {
    const size = promoted
      ? pending.length
      : record.wave === 0 && policy.canary > 0
        ? policy.canary
        : policy.batch;
    const wave = pending.slice(0, size);
    for (const n of wave) admitted.add(n);
    pending = pending.slice(size);
    next = {
      ...next,
      status: "rolling",
      wave: record.wave + 1,
      admitted: [...admitted].sort(),
      waveNodes: [...wave].sort(),
      waveAt: input.now,
    };
    held = wave.length === 0;
  }
  const waves = next.wave + Math.ceil(pending.length / policy.batch);
  const minHealthy = durationText(policy.minHealthyMs);
  let status: RolloutStatus = "rolling";
  let waiting: string;
  if (pending.length === 0 && held) {
    status = "done";
    waiting = `nothing: every node runs ${input.subject}`;
  } else if (pending.length > 0 && paused) {
    status = "paused";
    waiting = `paused by ${steer?.by ?? "an operator"}: \`${input.command("resume")}\``;
  } else if (pending.length > 0 && held && canaryProven && !resumed) {
    status = "paused";
    waiting = `the canary is proven; the policy pauses here: \`${input.command("resume")}\` or \`${input.command("promote")}\``;
  } else {
    waiting = `wave ${next.wave} of ${waves} (${listed(next.waveNodes)}): each runs ${input.subject} healthy for ${minHealthy}`;
  }
  return { record: { ...next, status, waves, waiting }, pending };
}

/** One node's state in a rollout, from its report and its heartbeat. */
export type NodeRun =
  | { readonly kind: "proven" }
  | { readonly kind: "proving" }
  | { readonly kind: "failing"; readonly error: string }
  | { readonly kind: "waiting" };

/** Whether a gate holds: each of its nodes proven, or failing within the tolerance, or not run. */
export function gateHolds(gate: readonly string[], runs: ReadonlyMap<string, NodeRun>): boolean {
  return gate.every((n) => {
    const r = runs.get(n);
    return r === undefined || r.kind === "proven" || r.kind === "failing";
  });
}

/** A node's report of running what the rollout gave it, its times read on the node's clock. */
export interface RunReport {
  readonly health: string;
  readonly lastError?: string | undefined;
  /** Since when it has run it healthy, when healthy (ms). */
  readonly healthySince: number;
  /** Since when it has run it at all: its deadline counts from here (ms). */
  readonly startedAt: number;
}

/**
 * How an admitted node runs what the rollout gave it (decisions 0130, 0131): failing as it
 * reports; healthy for min-healthy by its last heartbeat, proven; not healthy by the deadline
 * (from its report, else from its wave's start), failing with `late` and the deadline.
 */
export function runOnNode(options: {
  readonly policy: ResolvedRolloutPolicy;
  readonly record: Pick<WaveRecord, "waveNodes" | "waveAt">;
  readonly node: string;
  readonly presence: Presence | undefined;
  /** Its report of running it; undefined while it reports something else. */
  readonly run: RunReport | undefined;
  /** What the node missed: `not healthy`. */
  readonly late: string;
}): NodeRun {
  const { policy, record, node, run } = options;
  if (run?.health === "failing") {
    return { kind: "failing", error: run.lastError ?? "reported failing" };
  }
  const now = options.presence === undefined ? Number.NaN : Date.parse(options.presence.heartbeat);
  if (run?.health === "healthy") {
    const { minHealthyMs } = policy;
    return minHealthyMs === 0 || now - run.healthySince >= minHealthyMs
      ? { kind: "proven" }
      : { kind: "proving" };
  }
  const start =
    run !== undefined
      ? run.startedAt
      : record.waveNodes.includes(node)
        ? Date.parse(record.waveAt)
        : Number.NaN;
  if (now - start > policy.healthyDeadlineMs) {
    return {
      kind: "failing",
      error: `${options.late} within ${durationText(policy.healthyDeadlineMs)}`,
    };
  }
  return { kind: "waiting" };
}

/** The wave each node still to be reached is in, for its reason. */
export function wavesOf(
  pending: readonly string[],
  record: WaveRecord,
  batch: number,
): Map<string, number> {
  const out = new Map<string, number>();
  pending.forEach((n, i) => out.set(n, record.wave + 1 + Math.floor(i / batch)));
  return out;
}

/** Nodes in a reason: the first five, and how many more. */
export function listed(nodes: readonly string[]): string {
  return nodes.length <= 5
    ? nodes.join(", ")
    : `${nodes.slice(0, 5).join(", ")} and ${nodes.length - 5} more`;
}

/** Words cut to at most `max` characters, an ellipsis saying so. */
export const clipped = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;

/**
 * The failed nodes of a halt in a condition: the first five with their errors (each cut to 200
 * characters), and how many more; a condition's message holds at most 4,000 characters, and a
 * halt of a large wave would not fit whole (the record keeps every node and its error).
 */
export const failedListed = (nodes: ReadonlyArray<{ node: string; error: string }>): string =>
  listed(nodes.map((n) => `${n.node} (${clipped(n.error, 200)})`));
