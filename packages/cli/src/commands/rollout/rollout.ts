/**
 * `mesh rollout set|get|pause|resume|promote|abort|retry|status` (issue 22, decision 0130): an
 * operator's rollout policy for a module (over its manifest's `rollout:`), and their word on the
 * rollout of its build under way. The assigner reads both; its record of each rollout is in
 * `mesh-rollouts`, which `status` reads.
 */
import type { Command } from "commander";
import { KvBucket } from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MeshError,
  RolloutPolicy,
  checkName,
  issuesText,
  type RolloutAction,
  type RolloutOverride,
} from "@mesh/protocol";
import { rolloutStatus } from "./rollout-status.js";
import { steerRollout } from "./rollout-steer.js";
import { steerConfigRollout } from "./config-rollout-steer.js";
import { act, answer, connect, meshVerb, type MeshOptions } from "../../verb.js";
import type { ExitCode } from "../../output.js";

export interface SetOptions extends MeshOptions {
  readonly canary?: string;
  readonly batch?: string;
  readonly minHealthy?: string;
  readonly healthyDeadline?: string;
  readonly maxFailing?: string;
  readonly pauseAfterCanary?: boolean;
  readonly order?: string;
  /** Lift the operator's policy: the manifest's (or the mesh's default) applies again. */
  readonly clear?: boolean;
}

export function registerRolloutVerbs(program: Command): void {
  const rollout = program
    .command("rollout")
    .description("How new builds reach the fleet in waves, and steering a rollout under way.");
  act(
    meshVerb(rollout, "set", "Set a module's rollout policy (over its manifest's `rollout:`).")
      .argument("<module>")
      .option("--canary <n|n%>", "nodes given a new build first")
      .option("--batch <n|n%>", "nodes in each wave after the canary (100%: all at once)")
      .option("--min-healthy <duration>", "how long each node of a wave runs it healthy, e.g. 30s")
      .option(
        "--healthy-deadline <duration>",
        "how long a node may take to become healthy, e.g. 5m",
      )
      .option("--max-failing <n|n%>", "how many nodes may fail before the rollout halts")
      .option("--pause-after-canary", "wait for `mesh rollout resume` once the canary is proven")
      .option("--order <name|random|label=FACT>", "the order nodes are reached in")
      .option("--clear", "lift the operator's policy"),
    setVerb,
  );
  act(
    meshVerb(
      rollout,
      "get",
      "Show a module's rollout policy and where each value comes from.",
    ).argument("<module>"),
    getVerb,
  );
  act(
    meshVerb(
      rollout,
      "status",
      "Every rollout: build, wave, nodes done, healthy, failing, waiting.",
    ).argument("[module]"),
    rolloutStatus,
  );
  const steers: ReadonlyArray<[RolloutAction, string]> = [
    ["pause", "Give no further wave of the rollout under way."],
    ["resume", "Go on with a paused rollout."],
    ["promote", "Give the build to every node now, skipping the remaining gates."],
    ["abort", "Halt the rollout and set every node given the build back at once."],
    ["retry", "Start a halted rollout again from the canary, its failed marks lifted."],
  ];
  for (const [action, description] of steers) {
    act(
      meshVerb(rollout, action, description)
        .argument("<module>")
        .option("--why <text>", "why, for the record")
        .option("--config <key>", "the rollout of this config key's value, not of a build"),
      (module: string, options: SteerOptions) => steerVerb(action, module, options),
    );
  }
}

/** The policy an operator wrote with flags, checked against the manifest's own schema. */
export function policyOf(options: SetOptions): RolloutPolicy {
  const count = (v: string | undefined): number | string | undefined =>
    v === undefined ? undefined : /^[0-9]+$/.test(v) ? Number(v) : v;
  const input = {
    ...(options.canary === undefined ? {} : { canary: count(options.canary) }),
    ...(options.batch === undefined ? {} : { batch: count(options.batch) }),
    ...(options.minHealthy === undefined ? {} : { "min-healthy": options.minHealthy }),
    ...(options.healthyDeadline === undefined
      ? {}
      : { "healthy-deadline": options.healthyDeadline }),
    ...(options.maxFailing === undefined ? {} : { "max-failing": count(options.maxFailing) }),
    ...(options.pauseAfterCanary === true ? { "pause-after-canary": true } : {}),
    ...(options.order === undefined ? {} : { order: options.order }),
  };
  const parsed = RolloutPolicy.safeParse(input);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.USAGE,
      `the rollout policy is refused: ${issuesText(parsed.error)}; e.g. mesh rollout set hello --canary 1 --batch 25% --min-healthy 30s`,
    );
  }
  return parsed.data;
}

async function setVerb(module: string, options: SetOptions): Promise<ExitCode> {
  checkName("module", module);
  await using bus = await connect(options);
  const policies = await KvBucket.open(bus, Bucket.rolloutPolicies);
  if (options.clear === true) {
    await policies.delete(module);
    return answer(options, { module, policy: null }, () => [
      `the operator's rollout policy of ${module} is lifted: its manifest's (or the mesh's default) applies`,
    ]);
  }
  const before = (await policies.get(module))?.value.policy;
  const policy = { ...before, ...policyOf(options) };
  const value: RolloutOverride = { policy, by: bus.credential.user, at: new Date().toISOString() };
  await policies.put(module, value);
  return answer(options, { module, policy }, () => [
    `rollout policy of ${module}: ${describe(policy)} (\`mesh rollout get ${module}\` shows it resolved; it applies from the next step of a rollout)`,
  ]);
}

async function getVerb(module: string, options: MeshOptions): Promise<ExitCode> {
  checkName("module", module);
  await using bus = await connect(options);
  const override = (await (await KvBucket.open(bus, Bucket.rolloutPolicies)).get(module))?.value;
  const record = (await (await KvBucket.open(bus, Bucket.rollouts)).get(module))?.value;
  return answer(
    options,
    { module, override: override?.policy ?? null, resolved: record?.policy ?? null },
    () => [
      override === undefined
        ? `${module}: no operator's policy; the manifest's \`rollout:\` or the mesh's default applies`
        : `${module}: the operator's policy (by ${override.by} at ${override.at}): ${describe(override.policy)}`,
      record === undefined
        ? "no rollout yet, so nothing resolved"
        : `as the last rollout (build ${record.build}) resolved it, from the ${record.policy.source}: canary ${record.policy.canary}, batch ${record.policy.batch}, min-healthy ${record.policy.minHealthyMs} ms, healthy-deadline ${record.policy.healthyDeadlineMs} ms, max-failing ${record.policy.maxFailing}${record.policy.pauseAfterCanary ? ", pause after the canary" : ""}, order ${record.policy.order}`,
    ],
  );
}

function describe(policy: RolloutPolicy): string {
  const parts = Object.entries(policy).map(([k, v]) => `${k} ${String(v)}`);
  return parts.length === 0 ? "(nothing set)" : parts.join(", ");
}

type SteerOptions = MeshOptions & { why?: string; config?: string };

async function steerVerb(
  action: RolloutAction,
  module: string,
  options: SteerOptions,
): Promise<ExitCode> {
  checkName("module", module);
  if (options.config !== undefined) checkName("config key", options.config);
  await using bus = await connect(options);
  const done =
    options.config === undefined
      ? await steerRollout(bus, {
          module,
          steer: action,
          ...(options.why === undefined ? {} : { why: options.why }),
        })
      : await steerConfigRollout(bus, { module, key: options.config, steer: action });
  return answer(options, done.result, () => [
    `${done.message} (\`mesh rollout status ${module}\`)`,
  ]);
}
