/**
 * Steering a config value's rollout (decision 0131): `mesh rollout pause|resume|promote|abort
 * <module> --config <key>` writes the word into the request standing in
 * `mesh-config-rollouts.<module>.<key>`, so it applies to that request only (a new `--rollout`
 * of the key drops it). A retry is a new request: `mesh config set … --rollout`.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import {
  Bucket,
  ConfigRolloutRequest,
  ErrorCode,
  MeshError,
  checkName,
  configKey,
  type RolloutAction,
} from "@mesh/protocol";
import type { Done } from "../../verb.js";
import { by } from "../module/assign.js";

export async function steerConfigRollout(
  bus: MeshBus,
  input: { module: string; key: string; steer: RolloutAction },
): Promise<Done> {
  const module = checkName("module", input.module);
  const k = configKey(module, checkName("config key", input.key));
  const set = `mesh config set ${module} ${input.key} <value> --rollout`;
  if (input.steer === "retry") {
    throw new MeshError(
      ErrorCode.USAGE,
      `a config rollout is not retried by \`mesh rollout retry --config\`: the request is the value; once fixed, \`${set}\` starts a new one`,
      { module, key: k },
    );
  }
  const requests = await KvBucket.open(bus, Bucket.configRollouts);
  const request = (await requests.get(k))?.value;
  const record = (await (await KvBucket.open(bus, Bucket.configWaves)).get(k))?.value;
  if (request === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${module}'s ${input.key} has no config rollout to ${input.steer}: \`${set}\` starts one`,
      { module, key: k },
    );
  }
  const status = record?.request === request.at ? record.status : "rolling";
  if (status === "done" || status === "failed" || status === "aborted") {
    throw new MeshError(
      ErrorCode.CONFLICT,
      `the rollout of ${k}=${JSON.stringify(request.value)} is ${status}, so \`mesh rollout ${input.steer}\` has nothing to do; \`${set}\` starts a new one`,
      { module, key: k },
    );
  }
  const steer = { action: input.steer, by: by(bus), at: new Date().toISOString() };
  const next = ConfigRolloutRequest.parse({ ...request, steer });
  await requests.put(k, next);
  return {
    message: `said ${input.steer} to the rollout of ${k}=${JSON.stringify(request.value)} (${status}${record === undefined ? "" : `, wave ${record.wave} of ${record.waves}`}); the assigner takes it on its next pass`,
    result: { module, key: input.key, ...steer },
  };
}
