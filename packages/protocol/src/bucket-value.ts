/** The schema of each bucket's values, by bucket name: helpers parse a value by its bucket. */
import type { z } from "zod";
import { Bucket } from "./layout.js";
import { Rollout, RolloutOverride, RolloutSteer } from "./rollout.js";
import { ConfigRollout, ConfigRolloutRequest } from "./config-rollout.js";
import { Summary } from "./summary.js";
import { BuildModuleRegistration } from "./build-modules.js";
import {
  Answer,
  Ask,
  Assignment,
  Build,
  Candidate,
  Composed,
  CompositionVerdict,
  ConfigValue,
  Difference,
  Grant,
  Have,
  ModuleRegistration,
  Presence,
  Put,
  ResolvedManifest,
  Retry,
  SealedSecret,
  Want,
} from "./values.js";

/** The schema of each bucket's values, by bucket name. */
export const BucketValue = {
  [Bucket.modules]: ModuleRegistration,
  [Bucket.candidates]: Candidate,
  [Bucket.builds]: Build,
  [Bucket.manifests]: ResolvedManifest,
  [Bucket.assignments]: Assignment,
  [Bucket.presence]: Presence,
  [Bucket.have]: Have,
  [Bucket.puts]: Put,
  [Bucket.retries]: Retry,
  [Bucket.asks]: Ask,
  [Bucket.answers]: Answer,
  [Bucket.wants]: Want,
  [Bucket.compositions]: CompositionVerdict,
  [Bucket.differences]: Difference,
  [Bucket.composed]: Composed,
  [Bucket.grants]: Grant,
  [Bucket.config]: ConfigValue,
  [Bucket.secrets]: SealedSecret,
  [Bucket.summary]: Summary,
  [Bucket.rolloutPolicies]: RolloutOverride,
  [Bucket.rolloutSteers]: RolloutSteer,
  [Bucket.rollouts]: Rollout,
  [Bucket.configRollouts]: ConfigRolloutRequest,
  [Bucket.configWaves]: ConfigRollout,
  [Bucket.buildModules]: BuildModuleRegistration,
} as const satisfies Record<Bucket, z.ZodType>;

/** The value type of a bucket. */
export type BucketValueOf<B extends Bucket> = z.infer<(typeof BucketValue)[B]>;
