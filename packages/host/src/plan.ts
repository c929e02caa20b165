/**
 * The pure part of applying: from the composition, the config values and what is applied, what
 * to do. No disk, bus or process here.
 *
 * A composition's resources become the units of the host's kinds (`kinds/`, a file each):
 * - a delivery: one bundle unpacked at one path (an archive resource, or the bundle a process
 *   resource runs; several resources may name the same path, and then must name one digest);
 * - a need file, by resource id;
 * - a process, by resource id, with an `effective` fingerprint: its own resource, the current
 *   fingerprint of every resource its `restart-on` names, and its module's config values when it
 *   names `config`. A process restarts exactly when its effective fingerprint moves.
 *
 * This file joins each kind's part: the desired state is every kind's units, the plan every
 * kind's changes. The order they are carried out in is `kinds/index.ts`'s.
 */
import { fingerprintOf } from "@mesh/core";
import type { Resource } from "@mesh/protocol";
import type { AppliedState } from "./applied-state.js";
import { archiveKind, type ArchiveDesired, type ArchivePlan } from "./kinds/archive.js";
import { hostKind, type HostDesired, type HostPlan } from "./kinds/host.js";
import { needKind, type NeedDesired, type NeedPlan } from "./kinds/need.js";
import { processKind, type ProcessDesired, type ProcessPlan } from "./kinds/process.js";

export type { Delivery } from "./kinds/archive.js";
export type { DesiredProcess } from "./kinds/process.js";

/** What the composition asks for, as units. */
export type Desired = ArchiveDesired &
  HostDesired &
  NeedDesired &
  ProcessDesired & {
    /** Every module with a resource, and each module's fingerprint over its resources. */
    readonly modules: ReadonlyMap<string, string>;
  };

export type Plan = ArchivePlan & HostPlan & NeedPlan & ProcessPlan;

/**
 * The composition's units. `configOf(module)` is the module's config values as its processes
 * would be told them (a process that restarts on `config` restarts when they move).
 */
export function desiredOf(
  resources: readonly Resource[],
  configOf: (module: string) => unknown,
): Desired {
  return {
    ...archiveKind.desired(resources),
    ...hostKind.desired(resources),
    ...needKind.desired(resources),
    ...processKind.desired(resources, configOf),
    modules: modulesOf(resources),
  };
}

/** What to do to go from `applied` to `desired`. */
export function planOf(desired: Desired, applied: AppliedState): Plan {
  return {
    ...archiveKind.plan(desired, applied),
    ...hostKind.plan(desired),
    ...needKind.plan(desired, applied),
    ...processKind.plan(desired, applied),
  };
}

/** Whether a plan changes nothing. */
export const isEmptyPlan = (plan: Plan): boolean =>
  plan.fetch.length +
    plan.stop.length +
    plan.removeNeeds.length +
    plan.removeDeliveries.length +
    plan.writeNeeds.length +
    plan.start.length ===
  0;

/** Each module's fingerprint over its resources, in module order. */
function modulesOf(resources: readonly Resource[]): Map<string, string> {
  const perModule = new Map<string, Resource[]>();
  for (const r of resources) perModule.set(r.module, [...(perModule.get(r.module) ?? []), r]);
  const modules = new Map<string, string>();
  for (const [module, list] of [...perModule].sort(([a], [b]) => (a < b ? -1 : 1)))
    modules.set(module, fingerprintOf(list));
  return modules;
}
