/**
 * The buckets of rollouts (issue 22): an operator's policy override and steering per module, and
 * the assigner's record of each module's rollout, from which every later pass continues.
 */
import { z } from "zod";
import { BuildId } from "./manifest.js";
import { RolloutPolicy } from "./rollout-policy.js";
import { Actor, Instant, Name } from "./values.js";

/** mesh-rollout-policies `<module>`: an operator's policy, over the manifest's. */
export const RolloutOverride = z.object({ policy: RolloutPolicy, by: Actor, at: Instant }).strict();
export type RolloutOverride = z.infer<typeof RolloutOverride>;

export const ROLLOUT_ACTIONS = ["pause", "resume", "promote", "abort", "retry"] as const;
export const RolloutAction = z.enum(ROLLOUT_ACTIONS);
export type RolloutAction = z.infer<typeof RolloutAction>;

/**
 * mesh-rollout-steers `<module>`: an operator's last word on the rollout of one build. It applies
 * only while that build rolls out; `retry` names the attempt it retries, so it is taken once.
 */
export const RolloutSteer = z
  .object({
    build: BuildId,
    action: RolloutAction,
    attempt: z.number().int().positive().optional(),
    by: Actor,
    why: z.string().max(2000).optional(),
    at: Instant,
  })
  .strict();
export type RolloutSteer = z.infer<typeof RolloutSteer>;

export const ROLLOUT_STATUSES = ["rolling", "paused", "done", "failed", "aborted"] as const;
export const RolloutStatus = z.enum(ROLLOUT_STATUSES);
export type RolloutStatus = z.infer<typeof RolloutStatus>;

/** A policy with every value resolved: counts in nodes, durations in milliseconds. */
export const ResolvedRolloutPolicy = z
  .object({
    canary: z.number().int().nonnegative(),
    batch: z.number().int().positive(),
    minHealthyMs: z.number().int().nonnegative(),
    healthyDeadlineMs: z.number().int().positive(),
    maxFailing: z.number().int().nonnegative(),
    pauseAfterCanary: z.boolean(),
    order: z.string(),
    /** Where it came from: the operator's override, the build's manifest, or the mesh's default. */
    source: z.enum(["operator", "manifest", "default"]),
  })
  .strict();
export type ResolvedRolloutPolicy = z.infer<typeof ResolvedRolloutPolicy>;

/** What a rollout's record says of its waves, for a build's and a config value's alike. */
export const WAVE_FIELDS = {
  status: RolloutStatus,
  /** Waves given so far (the canary is wave 1). */
  wave: z.number().int().nonnegative(),
  /** Waves in all, with the nodes placed now. */
  waves: z.number().int().nonnegative(),
  /** Every node allowed the build or value, sorted. */
  admitted: z.array(Name),
  /** The nodes of the last wave given, sorted: the next wave waits for them. */
  waveNodes: z.array(Name),
  /** When the last wave was given (the assigner's clock; a step's time, never a gate's). */
  waveAt: Instant,
  policy: ResolvedRolloutPolicy,
  /** What it waits for, in words. */
  waiting: z.string(),
};
/** The fields of a rollout's record the waves move (mesh-rollouts and mesh-config-waves). */
export type WaveRecord = z.infer<z.ZodObject<typeof WAVE_FIELDS>>;

/**
 * mesh-rollouts `<module>`: the assigner's record of a module's rollout. It changes only at a
 * step (a wave given, a pause, the end, a halt), never with each report, so a rerun writes nothing.
 */
export const Rollout = z
  .object({
    module: Name,
    build: BuildId,
    /** The builds the nodes ran before, sorted: where a halt sets them back. */
    from: z.array(BuildId),
    attempt: z.number().int().positive(),
    ...WAVE_FIELDS,
    failed: z
      .object({
        reason: z.string().min(1),
        nodes: z.array(z.object({ node: Name, error: z.string() }).strict()),
        /** The time of the operator's last word when it halted: only a later `retry` lifts it. */
        steerAt: Instant.optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type Rollout = z.infer<typeof Rollout>;
