/**
 * The process kind: a declared process, by resource id, run and watched by the supervisor. Each has
 * an *effective* fingerprint: its own resource, the current fingerprint of every resource its
 * `restart-on` names, and its module's config values when it names `config`; it restarts exactly
 * when that moves.
 *
 * - remove: what goes, or is to restart, is stopped (TERM, grace, KILL) — but a module that failed
 *   its checks keeps what runs, and the runtime is not stopped here: it is replaced without a gap.
 * - apply: what is new is recorded, then started; the runtime started beside the old one, which
 *   drains once the new one serves what it served (`../runtime-handover.ts`).
 *
 * At start, `recoverProcesses` finds what an earlier host left: the recorded processes that still
 * live are adopted, the marked ones it has no record of are ended.
 */
import { join } from "node:path";
import { fingerprintOf } from "@mesh/core";
import { Env, RUNTIME_PROCESS_ID, type ProcessResource, type Resource } from "@mesh/protocol";
import { endGroup, isAlive, processesMarked } from "../proc.js";
import {
  DEFAULT_DRAIN_MS,
  DEFAULT_HANDOVER_MS,
  RUNTIME_STATUS_NAME,
  replaceRuntime,
  toolModulesOf,
} from "../runtime-handover.js";
import type { ProcessSpec } from "../supervisor.js";
import { changes, type Kind, type KindContext, type Pass } from "./kind.js";

/** The environment variable that marks a process as started by the host of one root. */
export const HOST_PROCESS_MARKER = "MESH_HOST_PROCESS";

export interface DesiredProcess {
  readonly resource: ProcessResource;
  readonly effective: string;
}

export interface ProcessDesired {
  /** By resource id. */
  readonly processes: ReadonlyMap<string, DesiredProcess>;
}

export interface ProcessPlan {
  /** Process ids to stop: gone from the composition, or to restart. */
  readonly stop: readonly string[];
  /** Process ids to start: new, or stopped above to restart. */
  readonly start: readonly string[];
}

type ProcessPass = Pass<ProcessDesired, ProcessPlan>;

export const processKind = {
  name: "process",

  desired(resources: readonly Resource[], configOf): ProcessDesired {
    const byId = new Map<string, Resource>();
    for (const r of resources) byId.set(r.id, r);
    const processes = new Map<string, DesiredProcess>();
    for (const r of resources) {
      if (r.type !== "process") continue;
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
    return { processes };
  },

  plan(desired, applied): ProcessPlan {
    const { drop, put } = changes(
      applied.processes,
      desired.processes,
      (had, want) => had.effective !== want.effective,
      (had, want) => had?.effective !== want.effective,
    );
    return { stop: drop, start: put.map(([id]) => id) };
  },

  remove: async (pass: ProcessPass, { store, supervisor }): Promise<void> => {
    const { plan, desired, failed } = pass;
    // The runtime is replaced without a gap: started anew beside the old one, in apply.
    for (const id of plan.stop)
      if (
        id === RUNTIME_PROCESS_ID &&
        plan.start.includes(id) &&
        supervisor.status(id)?.running === true
      )
        pass.replaced.add(id);
    for (const id of plan.stop) {
      const record = store.processes[id];
      if (record === undefined || pass.replaced.has(id)) continue;
      if (failed.has(record.module) && desired.processes.has(id)) continue; // keeps what runs
      await supervisor.stop(id);
      store.forget("processes", id);
    }
  },

  apply: async (pass: ProcessPass, context): Promise<void> => {
    const { store, supervisor } = context;
    for (const id of pass.plan.start) {
      const want = pass.desired.processes.get(id);
      if (want === undefined || pass.failed.has(want.resource.module)) continue;
      if (pass.replaced.has(id)) {
        await replace(want, context);
        continue;
      }
      if (supervisor.status(id) !== undefined) continue; // kept running above
      // Recorded before the spawn: a crash between the two leaves a marked process the next
      // host ends, never one it does not know of.
      store.record("processes", id, {
        module: want.resource.module,
        name: want.resource.name,
        effective: want.effective,
      });
      await store.saved();
      await supervisor.start(specOf(want.resource, context), { restarts: 0 });
    }
  },
} satisfies Kind<ProcessDesired, ProcessPlan>;

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
 * Starts the new runtime beside the old one, waits until it serves what the old one loaded, and
 * leaves the old one to drain (runtime-handover.ts).
 */
async function replace(want: DesiredProcess, context: KindContext): Promise<void> {
  const { store } = context;
  await replaceRuntime({
    root: context.root,
    node: context.node,
    supervisor: context.supervisor,
    spec: specOf(want.resource, context),
    modules: toolModulesOf(want.resource),
    record: async () => {
      store.record("processes", want.resource.id, {
        module: want.resource.module,
        name: want.resource.name,
        effective: want.effective,
      });
      await store.saved();
    },
    readyMs: context.runtimeHandover?.readyMs ?? DEFAULT_HANDOVER_MS,
    drainMs: context.runtimeHandover?.drainMs ?? DEFAULT_DRAIN_MS,
    signal: context.signal,
    bus: context.bus,
    log: context.log,
  });
}

/** How the supervisor runs a process resource on this machine. */
export function specOf(
  resource: ProcessResource,
  context: Pick<KindContext, "root" | "marker" | "runtimeIdleMs">,
): ProcessSpec {
  const runtime = resource.id === RUNTIME_PROCESS_ID;
  return {
    id: resource.id,
    module: resource.module,
    name: resource.name,
    argv: resource.run,
    // The runtime says which modules' tools loaded in a file the host reads for their health.
    // (one file per runtime process, `{pid}` being its own: two overlap when one replaces another).
    env: runtime
      ? {
          ...resource.env,
          [Env.runtimeStatus]: join(context.root, "run", RUNTIME_STATUS_NAME),
          ...(context.runtimeIdleMs === undefined
            ? {}
            : { [Env.runtimeIdleMs]: String(context.runtimeIdleMs) }),
        }
      : resource.env,
    // The runtime restarts at once after a healthy run, taken over by a standby booted ahead.
    ...(runtime ? { restartAtOnce: true, standby: { [Env.runtimeStandby]: "1" } } : {}),
    cwd: resource.path,
    user: resource.user,
    code: resource.digest,
    marker: { name: HOST_PROCESS_MARKER, value: `${context.marker}:${resource.id}` },
  };
}

/** Finds the processes a previous host started: adopts the recorded ones, ends the rest. */
export async function recoverProcesses(context: KindContext): Promise<void> {
  const { store, supervisor, marker, log } = context;
  const resources = new Map(
    (store.composed?.resources ?? []).flatMap((r) =>
      r.type === "process" ? [[r.id, r] as const] : [],
    ),
  );
  const marked = await processesMarked(HOST_PROCESS_MARKER, `${marker}:`);
  const adopted = new Set<number>();
  for (const [id, record] of Object.entries(store.processes)) {
    const resource = resources.get(id);
    const identity =
      record.pid !== undefined && record.startTime !== undefined
        ? { pid: record.pid, startTime: record.startTime }
        : undefined;
    if (identity !== undefined && resource !== undefined && (await isAlive(identity))) {
      await supervisor.adopt(specOf(resource, context), identity);
      adopted.add(identity.pid);
      log(`adopted ${id} (pid ${identity.pid})`);
    } else {
      // Gone, never spawned, or not in the composition it came from: started again if wanted.
      store.forget("processes", id);
    }
  }
  for (const stray of marked) {
    if (adopted.has(stray.pid)) continue;
    log(
      `ending ${stray.value.slice(marker.length + 1)} (pid ${stray.pid}): started by an earlier host that did not record it`,
    );
    await endGroup(stray, context.graceMs);
  }
  store.save();
  await store.saved();
}
