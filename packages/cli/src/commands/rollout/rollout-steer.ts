/**
 * Steering a module's rollout (issue 22, decision 0130): the operator's word in
 * `mesh-rollout-steers.<module>`, naming the build that rolls out now (a word about an older
 * build applies to nothing) and, for `retry`, the attempt it retries, so it is taken once. The
 * view's page and `mesh rollout pause|resume|promote|abort|retry` steer with this.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MeshError,
  RolloutSteer,
  checkName,
  type RolloutAction,
} from "@mesh/protocol";
import type { Done } from "../../verb.js";
import { by } from "../module/assign.js";
import { liftMarks } from "../module/retry.js";

export async function steerRollout(
  bus: MeshBus,
  input: { module: string; steer: RolloutAction; why?: string },
): Promise<Done> {
  const module = checkName("module", input.module);
  const rollout = (await (await KvBucket.open(bus, Bucket.rollouts)).get(module))?.value;
  if (rollout === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${module} has no rollout to ${input.steer}: one starts when a new build of it is wanted`,
      { module },
    );
  }
  const halted = rollout.status === "failed" || rollout.status === "aborted";
  if (input.steer === "retry" ? !halted : halted || rollout.status === "done") {
    throw new MeshError(
      ErrorCode.CONFLICT,
      `the rollout of ${module} build ${rollout.build} is ${rollout.status}, so \`mesh rollout ${input.steer}\` has nothing to do; ` +
        (halted
          ? `\`mesh rollout retry ${module}\` starts it again`
          : "a new build starts a new rollout"),
      { module },
    );
  }
  // The attempt's failed marks are lifted on every node, or its canary would fail it again at once.
  if (input.steer === "retry")
    await liftMarks(bus, { module, why: input.why ?? "mesh rollout retry" });
  const steer = RolloutSteer.parse({
    build: rollout.build,
    action: input.steer,
    ...(input.steer === "retry" ? { attempt: rollout.attempt } : {}),
    by: by(bus),
    ...(input.why === undefined ? {} : { why: input.why }),
    at: new Date().toISOString(),
  });
  await (await KvBucket.open(bus, Bucket.rolloutSteers)).put(module, steer);
  return {
    message: `said ${input.steer} to the rollout of ${module} ${rollout.build} (${rollout.status}, wave ${rollout.wave} of ${rollout.waves}); the assigner takes it on its next pass`,
    result: { module, ...steer },
  };
}
