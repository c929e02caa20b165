/**
 * The host's supervisor and applier as `Host` builds them from its options (host.ts only
 * orchestrates): the supervisor records each spawn in the applied state and sends each output line
 * on; the applier works with every part and the launcher that hands the node over (decision 0200).
 */
import { createHash } from "node:crypto";
import type { ArtifactStore, MeshBus, NodeKeys } from "@mesh/bus";
import { RUNTIME_PROCESS_ID } from "@mesh/protocol";
import type { AppliedStore } from "./applied-state.js";
import { Applier } from "./apply.js";
import { DEFAULT_HEALTH_RULES } from "./health.js";
import type { HostOptions } from "./host-options.js";
import { DEFAULT_POLL_MS } from "./host-options.js";
import type { HostOutput } from "./host-output.js";
import { DEFAULT_TAIL_LIMITS } from "./log-lines.js";
import type { Provisioner } from "./provisioner.js";
import { pruneRuntimeStatus } from "./runtime-handover.js";
import { DEFAULT_BACKOFF, Supervisor } from "./supervisor.js";

export function supervisorFor(o: {
  readonly options: HostOptions;
  readonly root: string;
  readonly store: AppliedStore;
  readonly output: HostOutput;
  readonly log: (line: string) => void;
}): Supervisor {
  const { options, root, store, output, log } = o;
  const rules = { ...DEFAULT_HEALTH_RULES, ...options.health };
  const supervisor: Supervisor = new Supervisor({
    root,
    backoff: options.backoff ?? DEFAULT_BACKOFF,
    healthyMs: rules.healthyMs,
    graceMs: options.graceMs ?? 10_000,
    tail: options.tail ?? DEFAULT_TAIL_LIMITS,
    pollMs: options.pollMs ?? DEFAULT_POLL_MS,
    onSpawned: (id, identity) => {
      // What a crashed runtime wrote says nothing now.
      if (id === RUNTIME_PROCESS_ID) void pruneRuntimeStatus(root, supervisor);
      store.spawned(id, identity);
    },
    onExit: (_id, exit) => log(`${exit.reason}; restarting in ${exit.delayMs} ms`),
    onLine: (module, processName, stream, line) => output.line(module, processName, stream, line),
  });
  return supervisor;
}

/** What applies the composition on this machine: files, archives, processes, provisions. */
export function applierFor(o: {
  readonly options: HostOptions;
  readonly node: string;
  readonly root: string;
  readonly keys: NodeKeys;
  readonly store: AppliedStore;
  readonly supervisor: Supervisor;
  readonly provisioner: Provisioner;
  readonly artifacts: () => ArtifactStore | undefined;
  readonly bus: () => MeshBus | undefined;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}): Applier {
  const { options, root } = o;
  const link = options.launcher;
  return new Applier({
    root,
    node: o.node,
    marker: createHash("sha256").update(root).digest("hex").slice(0, 16),
    keys: o.keys,
    store: o.store,
    supervisor: o.supervisor,
    provisioner: o.provisioner,
    graceMs: options.graceMs ?? 10_000,
    ...(options.archiveLimits === undefined ? {} : { archiveLimits: options.archiveLimits }),
    ...(options.runtimeHandover === undefined ? {} : { runtimeHandover: options.runtimeHandover }),
    ...(options.runtimeIdleMs === undefined ? {} : { runtimeIdleMs: options.runtimeIdleMs }),
    handover: { running: link?.build, ...(link === undefined ? {} : { link }) },
    artifacts: o.artifacts,
    bus: o.bus,
    signal: o.signal,
    log: o.log,
  });
}
