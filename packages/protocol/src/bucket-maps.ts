/**
 * Buckets as plain maps keyed as the bus keys them, typed from the protocol's one table of each
 * bucket's values (`BucketValue`): what the pure readers (the assigner, the fleet's read model)
 * take, so each names the buckets it reads instead of restating their types, and what the bus's
 * reads hand them.
 */
import type { Bucket } from "./layout.js";
import type { BucketValueOf } from "./bucket-value.js";
import type { Condition, ModuleRegistration } from "./values.js";

/** The named buckets (as `Bucket` names them), each as a map of its values by key. */
export type BucketMaps<N extends keyof typeof Bucket> = {
  readonly [K in N]: ReadonlyMap<string, BucketValueOf<(typeof Bucket)[K]>>;
};

/**
 * The fleet read by key (decision 0090), first half: the buckets that grow with the modules, not
 * the nodes, read whole, and the latest conditions.
 */
export type ModuleWide = BucketMaps<"assignments" | "builds" | "asks" | "answers" | "puts"> & {
  readonly registrations: ReadonlyMap<string, ModuleRegistration>;
  readonly conditions: readonly Condition[];
};

/** The fleet read by key, second half: the keys of the nodes and cells a page shows. */
export type NodeKeys = BucketMaps<"presence" | "compositions" | "wants" | "have" | "differences">;
