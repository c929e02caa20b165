/**
 * A config rollout's records and conditions in a pass (decision 0131): each record that moved is
 * written (before the mesh-config writes, so a later pass continues from it), and each step says
 * a condition — a wave given, a pause, the end, a halt with the nodes, their errors and how to
 * try again. Said as the record that carries the step is written, so a rerun says nothing.
 */
import { Bucket, type ConfigRollout } from "@mesh/protocol";
import { canonicalJson } from "../fingerprint.js";
import { AssignerConditionKind, conditionName, type AssignerCondition } from "./conditions.js";
import type { ConfigPlan, ConfigRolloutWrite } from "./config-rollout-plan.js";
import { durationText } from "./rollout-policy.js";
import { clipped, failedListed, listed } from "./wave-step.js";
import type { AssignerSnapshot } from "./snapshot.js";

/** Records that moved first, then the mesh-config writes of every plan; and the conditions. */
export function configRolloutWrites(
  snapshot: AssignerSnapshot,
  plans: ReadonlyMap<string, ConfigPlan>,
): { writes: ConfigRolloutWrite[]; conditions: AssignerCondition[] } {
  const own = snapshot.own.configWaves;
  const records: ConfigRolloutWrite[] = [];
  const config: ConfigRolloutWrite[] = [];
  const conditions: AssignerCondition[] = [];
  for (const key of [...new Set([...own.keys(), ...plans.keys()])].sort()) {
    const before = own.get(key);
    const plan = plans.get(key);
    if (plan !== undefined) config.push(...plan.writes);
    const after = plan?.record;
    if (before !== undefined && after !== undefined && same(before, after)) continue;
    // A request withdrawn leaves its record: it says how the last rollout of the key ended.
    if (after === undefined) continue;
    records.push({ bucket: Bucket.configWaves, key, value: after });
    conditions.push(...stepConditions(before, after));
  }
  return { writes: [...records, ...config], conditions };
}

const same = (a: ConfigRollout, b: ConfigRollout): boolean => canonicalJson(a) === canonicalJson(b);

const halts = (r: ConfigRollout | undefined): boolean =>
  r !== undefined && (r.status === "failed" || r.status === "aborted");

function stepConditions(
  before: ConfigRollout | undefined,
  after: ConfigRollout,
): AssignerCondition[] {
  const about = `${after.module}-${after.key}`;
  const name = conditionName(AssignerConditionKind.configRollout, about);
  const failedName = conditionName(AssignerConditionKind.configRolloutFailed, about);
  const sameRequest = before?.request === after.request;
  const out: AssignerCondition[] = [];
  if (halts(before) && !(sameRequest && halts(after))) {
    const message = `the halt of ${after.module}'s ${after.key} rollout no longer stands: a new value rolls out`;
    out.push({ name: failedName, level: "info", message, resolved: true });
  }
  const moved = !sameRequest || before?.status !== after.status || before.wave !== after.wave;
  if (!moved) return out;
  const head = `rollout of ${after.module}'s config ${after.key}=${clipped(canonicalJson(after.value), 200)}`;
  if (after.status === "done") {
    const message = `${head} done: it is the mesh-wide value now`;
    return [...out, { name, level: "info", message, resolved: true }];
  }
  if (halts(after)) {
    const what =
      after.status === "aborted" ? "aborted" : `halted at wave ${after.wave} of ${after.waves}`;
    const nodes = failedListed(after.failed?.nodes ?? []);
    const message =
      `${head} ${what}${nodes === "" ? "" : `: ${nodes}`}; every node is back on the mesh-wide ` +
      `value; once fixed: \`mesh config set ${after.module} ${after.key} <value> --rollout\``;
    return [
      ...out,
      { name: failedName, level: "error", message },
      { name, level: "error", message },
    ];
  }
  const message =
    after.status === "paused"
      ? `${head} paused at wave ${after.wave} of ${after.waves}: ${after.waiting}`
      : `${head}: wave ${after.wave} of ${after.waves} given to ${listed(after.waveNodes) || "no node"}; ` +
        `the next waits for each to run it healthy for ${durationText(after.policy.minHealthyMs)}`;
  return [...out, { name, level: "info", message }];
}
