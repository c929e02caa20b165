/**
 * Rollout records as the assigner writes them, for the tests of every package that reads one
 * (core's conditions of a rollout's steps, the CLI's `mesh rollout`).
 */
import type { Rollout } from "@mesh/protocol";
import { resolveRolloutPolicy } from "../assigner/rollout-policy.js";

/**
 * hello's build 2-b (over 1-a) in its canary: wave 1 of 3 given to n1, on five nodes under the
 * mesh's default policy (a canary of 1, batches of 2), waiting for n1 to run it healthy for 30s.
 */
export const canaryRollout: Rollout = {
  module: "hello",
  build: "2-b",
  from: ["1-a"],
  attempt: 1,
  status: "rolling",
  wave: 1,
  waves: 3,
  admitted: ["n1"],
  waveNodes: ["n1"],
  waveAt: "2026-01-01T00:00:00.000Z",
  policy: resolveRolloutPolicy({ nodes: 5 }),
  waiting: "wave 1 of 3 (n1): each runs 2-b healthy for 30s",
};
