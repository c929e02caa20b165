/**
 * What one pass of the assigner reads: every bucket it watches, as plain maps keyed as the bus
 * keys them, and the clock's reading (the rules hold no clock; only a new ask is stamped with it).
 */
import type { BucketMaps, Have, Manifest, ModuleRegistration } from "@mesh/protocol";

/** One kept report, with its revision in mesh-have when the shell knows it (a retry compares it). */
export type HaveReport = Have & { readonly revision?: number };

/** One node's report on one module: what it has now, and every kept revision, oldest first. */
export interface HaveRecord {
  /** The latest value; undefined when the key was deleted (the module no longer runs there). */
  readonly current: Have | undefined;
  /** Every kept value, oldest first (the current one included): where set-backs look. */
  readonly history: readonly HaveReport[];
}

/** What the assigner itself wrote and stands now: a pass writes only what differs from it. */
export interface AssignerOwn extends BucketMaps<
  "wants" | "compositions" | "differences" | "asks" | "rollouts" | "config" | "configWaves"
> {
  /**
   * The assigner's conditions that are said and not resolved, by name, with the node each is
   * about: a pass resolves those of its nodes whose cause has ended.
   */
  readonly conditions: ReadonlyMap<string, OpenCondition>;
}

/** An open condition of the assigner's about a node, as a pass needs it. */
export interface OpenCondition {
  readonly node: string;
}

/**
 * Keys: `assignments`, `puts` (empty when the puts bucket could not be opened) and `retries`
 * (operators' retries, which lift failed marks) `<node>.<module>` or `all.<module>`; `candidates`
 * `<module>.<seq>`; `builds` `<module>.<build>`; `composed` by node.
 */
export interface AssignerSnapshot extends BucketMaps<
  | "assignments"
  | "presence"
  | "candidates"
  | "builds"
  | "puts"
  | "retries"
  | "answers"
  | "composed"
  | "rolloutPolicies"
  | "rolloutSteers"
  | "configRollouts"
> {
  /** ISO 8601; stamps new asks and a rollout's waves only (no rule measures time with it). */
  readonly now: string;
  readonly registrations: ReadonlyMap<string, ModuleRegistration>;
  /** By digest. */
  readonly manifests: ReadonlyMap<string, Manifest>;
  /** `<node>.<module>`. */
  readonly have: ReadonlyMap<string, HaveRecord>;
  readonly own: AssignerOwn;
}

/** An empty snapshot, for tests and for a shell that fills maps as watches hand values. */
export function emptySnapshot(now = "1970-01-01T00:00:00.000Z"): AssignerSnapshot {
  return {
    now,
    registrations: new Map(),
    assignments: new Map(),
    presence: new Map(),
    candidates: new Map(),
    builds: new Map(),
    manifests: new Map(),
    have: new Map(),
    puts: new Map(),
    retries: new Map(),
    answers: new Map(),
    composed: new Map(),
    rolloutPolicies: new Map(),
    rolloutSteers: new Map(),
    configRollouts: new Map(),
    own: {
      wants: new Map(),
      compositions: new Map(),
      differences: new Map(),
      asks: new Map(),
      rollouts: new Map(),
      config: new Map(),
      configWaves: new Map(),
      conditions: new Map(),
    },
  };
}
