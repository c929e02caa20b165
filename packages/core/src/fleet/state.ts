/**
 * What the fleet's read model reads: the buckets as plain maps keyed as the bus keys them, the
 * latest conditions, and the clock's reading (only presence depends on it).
 */
import {
  PRESENCE_GONE_MS,
  type BucketMaps,
  type Condition,
  type ModuleRegistration,
  type Presence,
} from "@mesh/protocol";

/**
 * Keys: `assignments` `<node>.<module>` or `all.<module>`; `builds` `<module>.<build>`; `wants`,
 * `have` (the latest report) and `differences` `<node>.<module>`; `compositions` by node.
 */
export interface FleetState extends BucketMaps<
  | "presence"
  | "assignments"
  | "builds"
  | "wants"
  | "have"
  | "differences"
  | "compositions"
  | "asks"
  | "answers"
> {
  /** Milliseconds since the epoch: what "gone" is judged against. */
  readonly now: number;
  readonly registrations: ReadonlyMap<string, ModuleRegistration>;
  /** The latest conditions (the stream keeps the last per module and name). */
  readonly conditions: readonly Condition[];
}

/** An empty state at `now`, for tests and for readers that fill maps as they read. */
export function emptyFleetState(now = 0): FleetState {
  return {
    now,
    presence: new Map(),
    assignments: new Map(),
    registrations: new Map(),
    builds: new Map(),
    wants: new Map(),
    have: new Map(),
    differences: new Map(),
    compositions: new Map(),
    asks: new Map(),
    answers: new Map(),
    conditions: [],
  };
}

/** A node is present, gone (heard once, not for `PRESENCE_GONE_MS`), or never seen. */
export type NodeState = "present" | "gone" | "never";

/** The one rule for present and gone, used by `mesh status` and the view alike. */
export function nodeState(presence: Presence | undefined, now: number): NodeState {
  if (presence === undefined) return "never";
  const beat = Date.parse(presence.heartbeat);
  return Number.isFinite(beat) && now - beat < PRESENCE_GONE_MS ? "present" : "gone";
}
