/**
 * The assigner's conditions (issue 14.11): a set-back, a failing build kept wanted, a refused
 * composition check. Each is said once, as the want or verdict that carries it is written, and a
 * later pass over the same node resolves it once its cause has ended — the set-back superseded
 * (a new build, a retry, a put), the failing build healthy or replaced, the check passing, the
 * module unassigned or removed, the node gone from the mesh. Resolving says the condition again
 * under its name with `resolved`, so it replaces the open one.
 */
import { createHash } from "node:crypto";
import type { Want } from "@mesh/protocol";
import type { OpenCondition } from "./snapshot.js";

/** What the assigner has conditions about; a condition's name starts with its kind. */
export const AssignerConditionKind = {
  refused: "refused",
  setBack: "set-back",
  failing: "failing",
  /** Each step of a module's rollout (the last one said stands). */
  rollout: "rollout",
  /** A rollout halted or aborted, until it is retried or a new build rolls out. */
  rolloutFailed: "rollout-failed",
  /** Each step of a config value's rollout (decision 0131). */
  configRollout: "config-rollout",
  /** A config value's rollout halted or aborted, until a new request of the key. */
  configRolloutFailed: "config-rollout-failed",
} as const;
export type AssignerConditionKind =
  (typeof AssignerConditionKind)[keyof typeof AssignerConditionKind];

/** A condition for the operator channel, said as the assigner. */
export interface AssignerCondition {
  readonly name: string;
  readonly level: "info" | "warning" | "error";
  readonly message: string;
  /** The node it is about; a rollout's conditions are about a module, and name no node. */
  readonly node?: string;
  /** Its cause has ended: said under the same name, it replaces the open one. */
  readonly resolved?: boolean;
}

/** A condition name within the name rule: the readable one when it fits, a digest otherwise. */
export function conditionName(kind: AssignerConditionKind, about: string): string {
  const readable = `${kind}-${about}`;
  return /^[a-z][a-z0-9-]{0,62}$/.test(readable)
    ? readable
    : `${kind}-${createHash("sha256").update(about).digest("hex").slice(0, 16)}`;
}

/** The name of a condition about one module on one node. */
export const cellConditionName = (
  kind: typeof AssignerConditionKind.setBack | typeof AssignerConditionKind.failing,
  node: string,
  module: string,
): string => conditionName(kind, `${node}-${module}`);

/** What a pass learned about the conditions of the nodes it decided. */
export interface ConditionCauses {
  /** Names whose cause stands after this pass. */
  readonly standing: Set<string>;
  /** Names of the cells this pass decided → the module and what is wanted of it now. */
  readonly cells: Map<string, { readonly module: string; readonly want: Want | undefined }>;
}

export const noCauses = (): ConditionCauses => ({ standing: new Set(), cells: new Map() });

/**
 * Every open condition about a decided node (every node, on a full pass) whose cause no longer
 * stands, as its resolution.
 */
export function resolveEnded(
  open: ReadonlyMap<string, OpenCondition>,
  decided: ReadonlySet<string> | undefined,
  causes: ConditionCauses,
): AssignerCondition[] {
  const out: AssignerCondition[] = [];
  for (const [name, { node }] of [...open].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (decided !== undefined && !decided.has(node)) continue;
    if (causes.standing.has(name)) continue;
    out.push({
      name,
      level: "info",
      message: endedMessage(name, node, causes.cells.get(name)),
      node,
      resolved: true,
    });
  }
  return out;
}

function endedMessage(
  name: string,
  node: string,
  cell: { readonly module: string; readonly want: Want | undefined } | undefined,
): string {
  if (name.startsWith(`${AssignerConditionKind.refused}-`)) {
    return `the composition check on ${node} no longer refuses its set`;
  }
  const what = name.startsWith(`${AssignerConditionKind.setBack}-`)
    ? "the set-back"
    : "the failing build kept";
  if (cell === undefined) {
    return `${what} on ${node} no longer stands: the module is no longer decided there`;
  }
  return cell.want === undefined
    ? `${cell.module} is no longer wanted on ${node}, so ${what} no longer stands`
    : `${what} of ${cell.module} on ${node} no longer stands: build ${cell.want.build} is wanted (${cell.want.rule})`;
}
