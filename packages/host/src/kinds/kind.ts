/**
 * What every resource kind of the host is made of. A kind turns the composition's resources into
 * its units (`desired`), compares them with what the machine has (`plan`, pure), and has up to
 * three steps in a pass: `check` what it is to put before anything stops (a bad bundle, a need not
 * sealed yet: its module keeps what runs), `remove` what goes, and `apply` what is new. The pass
 * runs every kind's steps in the safe order that `kinds/index.ts` lists.
 */
import type { ArtifactStore, MeshBus, NodeKeys } from "@mesh/bus";
import type { ErrorCode, Have, Resource } from "@mesh/protocol";
import type { AppliedState, AppliedStore } from "../applied-state.js";
import type { LauncherLink } from "../launch/launcher-link.js";
import type { ArchiveLimits } from "../archives.js";
import type { Reason } from "../health.js";
import type { Provisioner } from "../provisioner.js";
import type { Supervisor } from "../supervisor.js";

/**
 * What a module waits for before it can start, and what ends the wait; its code says which kind
 * of wait it is (the host decides on it, never on the words).
 */
export type Waiting = NonNullable<Have["waitingFor"]> & { readonly code: ErrorCode };

/** What the steps of every kind work with on this machine. */
export interface KindContext {
  readonly root: string;
  readonly node: string;
  /** Marks the processes of this root's host (a hash of the root). */
  readonly marker: string;
  readonly keys: NodeKeys;
  readonly store: AppliedStore;
  readonly supervisor: Supervisor;
  readonly provisioner: Provisioner;
  readonly graceMs: number;
  readonly archiveLimits?: ArchiveLimits;
  readonly runtimeHandover?: { readonly readyMs?: number; readonly drainMs?: number };
  /** The node's idle time for its runtime's modules (HostOptions.runtimeIdleMs). */
  readonly runtimeIdleMs?: number;
  /**
   * The host build running here (its digest; undefined for the CLI's own of no known digest) and
   * its launcher, which hands the node over to another build (decision 0200); none when the host
   * was not started by one.
   */
  readonly handover: { readonly running: string | undefined; readonly link?: LauncherLink };
  /** The artifact store once the bus is there. */
  readonly artifacts: () => ArtifactStore | undefined;
  readonly bus: () => MeshBus | undefined;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

/** One pass's bookkeeping: what is wanted and planned, the modules failed or waiting so far. */
export interface Pass<D, P> {
  readonly desired: D;
  readonly plan: P;
  readonly failed: Map<string, Reason>;
  readonly waiting: Map<string, Waiting>;
  /** Processes replaced without a gap: the process kind's, from its remove to its apply. */
  readonly replaced: Set<string>;
  /** The module failed (the first reason stands), and it is said. */
  fail(module: string, error: unknown): void;
}

/** One kind's step of a pass. */
export type Step<D, P> = (pass: Pass<D, P>, context: KindContext) => Promise<void> | void;

/** A resource kind: its units, its plan, and its steps. */
export interface Kind<D, P> {
  readonly name: string;
  /** Its units from the composition; `configOf(module)` is a module's config as its processes see it. */
  desired(resources: readonly Resource[], configOf: (module: string) => unknown): D;
  /** What to check, remove and apply to go from `applied` to `desired` (pure). */
  plan(desired: D, applied: AppliedState): P;
  /** Before anything stops: what could fail or hold its module. */
  readonly check?: Step<D, P>;
  /** What nothing wants any more, or what is to be put again. */
  readonly remove: Step<D, P>;
  /** What is new, once the removes are done. */
  readonly apply: Step<D, P>;
}

/**
 * A table of what is applied against what is wanted, by key: what to take away (applied, and
 * wanted no more or `moved` from where it was) and what to put (wanted, and not applied as it is:
 * `stale`), each in key order.
 */
export function changes<A, D>(
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

export function sortedEntries<T>(map: ReadonlyMap<string, T>): Array<[string, T]> {
  return [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
