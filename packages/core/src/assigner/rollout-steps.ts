/**
 * The conditions of a rollout's steps (issue 22): each wave given, a pause, the end, a halt
 * (with the build, the nodes, their last error and the command that retries it), and the
 * halt's resolution once a retry or a new build supersedes it. Said as the record that carries
 * the step is written, so a rerun says nothing. Nodes are named five at a time and counted past
 * that, so a wave of a large fleet still fits a condition.
 */
import type { Rollout } from "@mesh/protocol";
import { AssignerConditionKind, conditionName, type AssignerCondition } from "./conditions.js";
import { durationText } from "./rollout-policy.js";
import { clipped, failedListed, listed } from "./wave-step.js";

const halts = (r: Rollout | undefined): boolean =>
  r !== undefined && (r.status === "failed" || r.status === "aborted");

const sameRollout = (a: Rollout | undefined, b: Rollout | undefined): boolean =>
  a !== undefined && b !== undefined && a.build === b.build && a.attempt === b.attempt;

/** What a record's change says: a step when its status or wave moved, and a halt's fate. */
export function stepConditions(
  module: string,
  before: Rollout | undefined,
  after: Rollout | undefined,
): AssignerCondition[] {
  const out: AssignerCondition[] = [];
  const failedName = conditionName(AssignerConditionKind.rolloutFailed, module);
  if (halts(before) && !(sameRollout(before, after) && halts(after))) {
    out.push({
      name: failedName,
      level: "info",
      message: `the halt of ${module} build ${before?.build} no longer stands: ${after === undefined ? "no rollout" : `build ${after.build} rolls out (attempt ${after.attempt})`}`,
      resolved: true,
    });
  }
  if (after === undefined) return out;
  const moved =
    !sameRollout(before, after) || before?.status !== after.status || before.wave !== after.wave;
  if (!moved) return out;
  const name = conditionName(AssignerConditionKind.rollout, module);
  if (after.status === "done") {
    // A finished rollout leaves nothing open: its last step, or a halt's error said under the
    // same name before it, is said resolved. A build no wave carried (a first deploy, nothing to
    // keep anywhere) after no halt is no step to say.
    if (after.wave > 0 || halts(before)) {
      out.push({ name, level: "info", message: stepMessage(after), resolved: true });
    }
    return out;
  }
  if (halts(after)) {
    const message = haltMessage(after);
    out.push({ name: failedName, level: "error", message });
    out.push({ name, level: "error", message });
    return out;
  }
  out.push({ name, level: "info", message: stepMessage(after) });
  return out;
}

function stepMessage(r: Rollout): string {
  const head = `rollout of ${r.module} build ${r.build}`;
  if (r.status === "done") return `${head} done: every node of ${r.admitted.length} runs it`;
  if (r.status === "paused") return `${head} paused at wave ${r.wave} of ${r.waves}: ${r.waiting}`;
  const wave = r.wave === 1 && r.policy.canary > 0 ? "the canary (wave 1" : `wave ${r.wave}`;
  const close = wave.startsWith("the canary") ? ")" : "";
  return (
    `${head}: ${wave} of ${r.waves}${close} given to ${listed(r.waveNodes) || "no node"}; ` +
    `the next waits for each to run it healthy for ${durationText(r.policy.minHealthyMs)}`
  );
}

/** A halt: the build, the nodes and their errors, where the others went, the command to retry. */
export function haltMessage(r: Rollout): string {
  const what = r.status === "aborted" ? "aborted" : `halted at wave ${r.wave} of ${r.waves}`;
  const nodes = failedListed(r.failed?.nodes ?? []);
  const from = r.from.length === 0 ? "the build each ran before" : `build ${r.from.join(" or ")}`;
  return (
    `rollout of ${r.module} build ${r.build} ${what}: ${clipped(r.failed?.reason ?? "", 500)}` +
    `${nodes === "" ? "" : `; nodes: ${nodes}`}; every node given it is set back to ${from}; ` +
    `once fixed: \`mesh rollout retry ${r.module}\`, or a new build`
  );
}
