/**
 * The pure part of applying: from the composition, the config values and what is applied, what
 * to do and in which order. No disk, bus or process here.
 *
 * A composition has three kinds of resource, and the host turns them into three kinds of unit:
 * - a delivery: one bundle unpacked at one path (an archive resource, or the bundle a process
 *   resource runs; several resources may name the same path, and then must name one digest);
 * - a need file, by resource id;
 * - a process, by resource id, with an `effective` fingerprint: its own resource, the current
 *   fingerprint of every resource its `restart-on` names, and its module's config values when it
 *   names `config`. A process restarts exactly when its effective fingerprint moves.
 *
 * The order is safe: fetch and check every new bundle first (a bad one fails its module before
 * anything of that module is stopped), then stop, then remove, then write needs, then move the
 * new bundles into place, then start.
 */
import { fingerprintOf } from "@mesh/core";
import type { NeedResource, ProcessResource, Resource } from "@mesh/protocol";
import type { AppliedState } from "./applied-state.js";

/** A bundle to deliver at `path`. */
export interface Delivery {
  readonly path: string;
  readonly module: string;
  readonly source: string;
  readonly digest: string;
}

export interface DesiredProcess {
  readonly resource: ProcessResource;
  readonly effective: string;
}

/** What the composition asks for, as units. */
export interface Desired {
  readonly deliveries: ReadonlyMap<string, Delivery>;
  readonly needs: ReadonlyMap<string, NeedResource>;
  readonly processes: ReadonlyMap<string, DesiredProcess>;
  /** Modules whose resources contradict each other (two digests for one path), with why. */
  readonly conflicts: ReadonlyMap<string, string>;
  /** Every module with a resource, and each module's fingerprint over its resources. */
  readonly modules: ReadonlyMap<string, string>;
}

export interface Plan {
  /** Deliveries whose bundle must be fetched, checked and unpacked beside its path. */
  readonly fetch: readonly Delivery[];
  /** Process ids to stop: gone from the composition, or to restart. */
  readonly stop: readonly string[];
  /** Need ids whose file is to be removed. */
  readonly removeNeeds: readonly string[];
  /** Bundle paths to remove. */
  readonly removeDeliveries: readonly string[];
  readonly writeNeeds: readonly NeedResource[];
  /** Deliveries to move into place (the fetched ones). */
  readonly place: readonly Delivery[];
  /** Process ids to start: new, or stopped above to restart. */
  readonly start: readonly string[];
}

/**
 * What of a resource restarts the processes that name it in `restart-on`: all of it, but a
 * credential's sealed content while its key (`holder`) stays — a renewal (decision 0150): the
 * file is written again and the process reads it when it next logs in.
 */
function restartingPart(r: Resource): Resource {
  if (r.type !== "need" || r.holder === undefined) return r;
  const { sealed: _sealed, ...rest } = r;
  return rest;
}

/**
 * The composition's units. `configOf(module)` is the module's config values as its processes
 * would be told them (a process that restarts on `config` restarts when they move).
 */
export function desiredOf(
  resources: readonly Resource[],
  configOf: (module: string) => unknown,
): Desired {
  const byId = new Map<string, Resource>();
  for (const r of resources) byId.set(r.id, r);
  const deliveries = new Map<string, Delivery>();
  const needs = new Map<string, NeedResource>();
  const processes = new Map<string, DesiredProcess>();
  const conflicts = new Map<string, string>();
  const perModule = new Map<string, Resource[]>();
  for (const r of resources) perModule.set(r.module, [...(perModule.get(r.module) ?? []), r]);

  for (const r of resources) {
    if (r.type === "need") {
      needs.set(r.id, r);
      continue;
    }
    const delivery: Delivery = {
      path: r.path,
      module: r.module,
      source: r.source,
      digest: r.digest,
    };
    const seen = deliveries.get(r.path);
    if (seen !== undefined && (seen.digest !== r.digest || seen.module !== r.module)) {
      conflicts.set(
        r.module,
        `${r.id} asks for ${r.digest.slice(0, 12)}… at ${JSON.stringify(r.path)}, where ${seen.module} already asks for ${seen.digest.slice(0, 12)}…; the composition is inconsistent — recompose the node`,
      );
    } else deliveries.set(r.path, delivery);
    if (r.type === "process") {
      const restartOn: Record<string, string | null> = {};
      let config: unknown = null;
      for (const id of r["restart-on"]) {
        if (id === "config") config = configOf(r.module) ?? null;
        else {
          const named = byId.get(id);
          restartOn[id] = named === undefined ? null : fingerprintOf(restartingPart(named));
        }
      }
      processes.set(r.id, {
        resource: r,
        effective: fingerprintOf({ resource: r, restartOn, config }),
      });
    }
  }
  const modules = new Map<string, string>();
  for (const [module, list] of [...perModule].sort(([a], [b]) => (a < b ? -1 : 1)))
    modules.set(module, fingerprintOf(list));
  return { deliveries, needs, processes, conflicts, modules };
}

/** What to do to go from `applied` to `desired`. */
export function planOf(desired: Desired, applied: AppliedState): Plan {
  const fetch: Delivery[] = [];
  for (const d of sortedValues(desired.deliveries)) {
    if (applied.deliveries[d.path]?.digest !== d.digest) fetch.push(d);
  }
  const processes = changes(
    applied.processes,
    desired.processes,
    (had, want) => had.effective !== want.effective,
    (had, want) => had?.effective !== want.effective,
  );
  const needs = changes(
    applied.needs,
    desired.needs,
    (had, want) => had.path !== want.path,
    (had, want) => had?.fingerprint !== fingerprintOf(want),
  );
  const stop = processes.drop;
  const start = processes.put.map(([id]) => id);
  const removeNeeds = needs.drop;
  const writeNeeds = needs.put.map(([, want]) => want);
  const removeDeliveries = Object.keys(applied.deliveries)
    .filter((path) => !desired.deliveries.has(path))
    .sort();
  return { fetch, stop, removeNeeds, removeDeliveries, writeNeeds, place: fetch, start };
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

/**
 * A table of what is applied against what is wanted, by key: what to take away (applied, and
 * wanted no more or `moved` from where it was) and what to put (wanted, and not applied as it is:
 * `stale`), each in key order.
 */
function changes<A, D>(
  applied: Readonly<Record<string, A>>,
  desired: ReadonlyMap<string, D>,
  moved: (had: A, want: D) => boolean,
  stale: (had: A | undefined, want: D) => boolean,
): { drop: string[]; put: Array<[string, D]> } {
  const drop = Object.keys(applied)
    .sort()
    .filter((id) => {
      const want = desired.get(id);
      return want === undefined || moved(applied[id] as A, want);
    });
  const put = sortedEntries(desired).filter(([id, want]) => stale(applied[id], want));
  return { drop, put };
}

function sortedEntries<T>(map: ReadonlyMap<string, T>): Array<[string, T]> {
  return [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function sortedValues<T>(map: ReadonlyMap<string, T>): T[] {
  return sortedEntries(map).map(([, v]) => v);
}
