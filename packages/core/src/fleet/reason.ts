/**
 * The rule behind `mesh status` and the view (issue 14): every assigned (node, module) is in
 * exactly one of three states — running healthy; starting; or not running because of something
 * named, with the command that fixes it. A pure function of the fleet's state.
 */
import { nodeModuleKey, PRESENCE_GONE_MS, type Have, type Want } from "@mesh/protocol";
import { nodeState, type FleetState, type NodeState } from "./state.js";

export type CellState = "healthy" | "starting" | "not-running";

export interface CellReason {
  readonly node: string;
  readonly module: string;
  readonly state: CellState;
  /** What is so, as a sentence: always set. */
  readonly reason: string;
  /** The command to run (or wait on): set for every state but healthy. */
  readonly fix?: string;
}

type Verdict = Omit<CellReason, "node" | "module">;

/** Why an assigned module runs, starts, or does not run on a node, and what fixes it. */
export function cellReason(
  state: FleetState,
  node: string,
  module: string,
  /** The node's state, when the caller judged it already (`nodeState` of its presence). */
  where?: NodeState,
): CellReason {
  const verdict = nodePart(state, node, module, where) ?? wantPart(state, node, module);
  return { node, module, ...verdict };
}

function nodePart(
  state: FleetState,
  node: string,
  module: string,
  judged: NodeState | undefined,
): Verdict | undefined {
  const presence = state.presence.get(node);
  const where = judged ?? nodeState(presence, state.now);
  const unassign = `\`mesh unassign ${module} --node ${node}\``;
  if (where === "never") {
    return notRunning(
      `${node} has never been present`,
      `add it: \`mesh join-token\`, then \`mesh join\` on ${node}; or ${unassign}`,
    );
  }
  if (where === "gone") {
    return notRunning(
      `${node} is gone: last heard at ${presence?.heartbeat ?? "-"}, over ${PRESENCE_GONE_MS / 1000} s ago`,
      `start its host (\`mesh host --node ${node}\`, or \`mesh up\` on it); or ${unassign}`,
    );
  }
  return undefined;
}

function wantPart(state: FleetState, node: string, module: string): Verdict {
  // A lookup key only (`nodeModuleKey` without its name checks, run 200,000 times on a big fleet).
  const key = `${node}.${module}`;
  const want = state.wants.get(key);
  const have = state.have.get(key);
  if (want === undefined) return unwanted(state, node, module);
  if (have?.build === want.build) return runningWanted({ state, node, module, want, have });
  return notApplied({ state, node, module, want, have });
}

/** One wanted cell, as the verdicts below read it: the fleet, where, what is wanted and what runs. */
interface WantedCell<H extends Have | undefined = Have> {
  readonly state: FleetState;
  readonly node: string;
  readonly module: string;
  readonly want: Want;
  readonly have: H;
}

/** The node reports the wanted build. */
function runningWanted(cell: WantedCell): Verdict {
  const { state, node, module, want, have } = cell;
  const logs = `\`mesh logs ${module} --node ${node}\``;
  switch (have.health) {
    case "healthy":
      return { state: "healthy", reason: `runs build ${want.build} healthy (${want.rule})` };
    case "starting":
      // Waiting on the operator (a secret not set) is not starting: it will not start alone.
      if (have.waitingFor !== undefined) {
        return notRunning(`build ${want.build} is ${have.waitingFor.what}`, have.waitingFor.fix);
      }
      // Between the restarts of a crash loop a module is not starting: it exits again.
      if ((have.exits?.inARow ?? 0) >= CRASH_LOOP_EXITS) return crashLooping(cell);
      return {
        state: "starting",
        reason:
          have.exits === undefined
            ? `build ${want.build} is starting`
            : `build ${want.build} is starting again: it exited at ${have.exits.last}${error(have)}`,
        fix: `wait, then \`mesh status\`; if it stays starting: ${logs}`,
      };
    case "failing":
      if (have.exits !== undefined) return crashLooping(cell);
      return notRunning(
        `build ${want.build} fails on ${node}${error(have)}; the host restarts it with backoff (${have.restarts} restarts)`,
        `read ${logs}; fix the module (a new build is wanted by itself), or once the cause is gone: \`mesh retry ${module} --node ${node}\``,
      );
    case "stopped":
      return (
        condition(state, node, module) ??
        notRunning(
          `build ${want.build} is stopped on ${node}${error(have)}`,
          `read \`mesh logs host --node ${node}\` and \`mesh differences --node ${node}\``,
        )
      );
  }
}

/** Exits in a row from which a module is crash-looping, not starting. */
export const CRASH_LOOP_EXITS = 2;

/** The wanted build exits again and again: how often, the last exit's reason, and the fixes. */
function crashLooping({ state, node, module, want, have }: WantedCell): Verdict {
  const exits = have.exits?.inARow ?? 0;
  const older = olderBuild(state, module, want.build);
  const put =
    older === undefined
      ? `put an older build (\`mesh builds ${module}\` lists them): \`mesh put ${module} <build> --node ${node}\``
      : `put an older build: \`mesh put ${module} ${older} --node ${node}\``;
  return notRunning(
    `build ${want.build} crash-loops on ${node}: ${exits} exits in a row` +
      `${have.exits === undefined ? "" : `, the last at ${have.exits.last}`}${error(have)}; ` +
      `the host restarts it with backoff (${have.restarts} restarts in all)`,
    `read \`mesh logs ${module} --node ${node}\`; fix the module (a new build is wanted by itself), ` +
      `or ${put}; once the cause is gone: \`mesh retry ${module} --node ${node}\``,
  );
}

/** The newest finished build of the module from before `build`, to put while it is fixed. */
function olderBuild(state: FleetState, module: string, build: string): string | undefined {
  const builds = [...state.builds.values()].filter((b) => b.module === module);
  const wanted = builds.find((b) => b.build === build)?.candidate ?? Number.POSITIVE_INFINITY;
  return builds
    .filter((b) => b.status === "built" && b.build !== build && b.candidate <= wanted)
    .sort((a, b) => b.candidate - a.candidate || (a.build < b.build ? 1 : -1))[0]?.build;
}

/** Wanted, but the node reports another build or nothing. */
function notApplied({ state, node, module, want, have }: WantedCell<Have | undefined>): Verdict {
  const verdict = state.compositions.get(node);
  if (verdict?.verdict === "refused") {
    return notRunning(
      `the composition check refuses ${node}'s set: ${verdict.reasons.join("; ") || "see the check"}`,
      `\`mesh compose --node ${node}\` names each refusal and its fix`,
    );
  }
  const said = condition(state, node, module);
  if (said !== undefined) return said;
  if (have?.health === "failing") {
    return notRunning(
      `${node} reports build ${have.build ?? "-"} failing${error(have)}; build ${want.build} is wanted and not applied yet`,
      `\`mesh differences --node ${node}\`; \`mesh logs ${module} --node ${node}\``,
    );
  }
  const running = have !== undefined && have.health !== "stopped" && have.build !== undefined;
  return {
    state: "starting",
    reason: running
      ? `build ${want.build} is wanted (${want.rule}); ${node} still runs ${have.build} while it applies it`
      : `build ${want.build} is wanted (${want.rule}); ${node} has not reported it yet`,
    fix: `wait, then \`mesh status\`; if it stays: \`mesh differences --node ${node}\` and \`mesh logs host --node ${node}\``,
  };
}

/** Assigned, yet nothing is wanted: why, from the asks, the assigner's difference and the builds. */
function unwanted(state: FleetState, node: string, module: string): Verdict {
  for (const ask of state.asks.values()) {
    if (ask.module !== module || !ask.nodes.includes(node) || state.answers.has(ask.id)) continue;
    return notRunning(`waits for an answer: ${ask.what}`, `\`mesh answer ${ask.id} yes\` (or no)`);
  }
  const fromBuilds = buildsPart(state, module);
  if (fromBuilds !== undefined) return fromBuilds;
  const difference = state.differences.get(nodeModuleKey(node, module));
  if (difference !== undefined && difference.reasons.length > 0) {
    return notRunning(
      difference.reasons.join("; "),
      `\`mesh differences --node ${node}\`; \`mesh wants --node ${node}\``,
    );
  }
  return {
    state: "starting",
    reason: `${module} is assigned to ${node}; the assigner has not written its want yet`,
    fix: `wait, then \`mesh status\`; if it stays: \`mesh logs assigner\``,
  };
}

function buildsPart(state: FleetState, module: string): Verdict | undefined {
  const builds = [...state.builds.values()].filter((b) => b.module === module);
  if (builds.some((b) => b.status === "built")) return undefined;
  if (!state.registrations.has(module) && builds.length === 0) {
    return notRunning(
      `${module} is not registered`,
      `\`mesh module add <folder of ${module}>\`; or \`mesh unassign ${module}\``,
    );
  }
  if (builds.some((b) => b.status === "building") || builds.length === 0) {
    return {
      state: "starting",
      reason: `${module} has no finished build yet`,
      fix: `wait, then \`mesh builds ${module}\``,
    };
  }
  return notRunning(
    `every build of ${module} failed`,
    `\`mesh builds ${module}\` shows the log; fix the source and it builds again`,
  );
}

/** The newest warning or error said about this module on this node, as the reason. */
function condition(state: FleetState, node: string, module: string): Verdict | undefined {
  const said = state.conditions
    .filter((c) => c.module === module && (c.node === undefined || c.node === node))
    .filter((c) => c.level !== "info" && c.resolved !== true)
    .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))[0];
  if (said === undefined) return undefined;
  return notRunning(
    said.message,
    `\`mesh conditions --module ${module}\`; \`mesh logs ${module} --node ${node}\``,
  );
}

const error = (have: Have): string => (have.lastError === undefined ? "" : `: ${have.lastError}`);

const notRunning = (reason: string, fix: string): Verdict => ({
  state: "not-running",
  reason,
  fix,
});
