/**
 * Buckets as plain maps keyed as the bus keys them, typed from the protocol's one table of each
 * bucket's values (`BucketValue`): what the pure readers (the assigner, the fleet's read model)
 * take, so each names the buckets it reads instead of restating their types.
 */
import type { Bucket, BucketValueOf } from "@mesh/protocol";

/** The named buckets (as `Bucket` names them), each as a map of its values by key. */
export type BucketMaps<N extends keyof typeof Bucket> = {
  readonly [K in N]: ReadonlyMap<string, BucketValueOf<(typeof Bucket)[K]>>;
};
