/**
 * The host's executor: makes the machine match a composition, step by step (fetch, wait, stop,
 * remove, write needs, place, start), recording each step in the applied-state store before or
 * after it as a crash requires. It also finds, at start, the processes an earlier host left.
 */
import { isBusTrouble, type ArtifactStore, type MeshBus, type NodeKeys } from "@mesh/bus";
import {
  Env,
  ErrorCode,
  MeshError,
  RUNTIME_PROCESS_ID,
  errorCodeOf,
  type Composed,
  type Have,
  type NeedResource,
  type ProcessResource,
} from "@mesh/protocol";
import { fingerprintOf } from "@mesh/core";
import { join } from "node:path";
import type { AppliedStore } from "./applied-state.js";
import {
  DEFAULT_ARCHIVE_LIMITS,
  checkBundlePath,
  fetchVerified,
  placeBundle,
  pruneCache,
  removeBundle,
  unpackBeside,
  type ArchiveLimits,
} from "./archives.js";
import type { Reason } from "./health.js";
import { checkNeedPath, refuseForeignFile, removeNeed, writeNeed } from "./needs.js";
import { desiredOf, planOf, type Desired, type Plan } from "./plan.js";
import { endGroup, isAlive, processesMarked } from "./proc.js";
import type { Provisioner } from "./provisioner.js";
import {
  DEFAULT_DRAIN_MS,
  DEFAULT_HANDOVER_MS,
  RUNTIME_STATUS_NAME,
  replaceRuntime,
  toolModulesOf,
} from "./runtime-handover.js";
import type { ProcessSpec, Supervisor } from "./supervisor.js";

/** The environment variable that marks a process as started by the host of one root. */
export const HOST_PROCESS_MARKER = "MESH_HOST_PROCESS";

/**
 * What a module waits for before it can start, and what ends the wait; its code says which kind
 * of wait it is (the host decides on it, never on the words).
 */
export type Waiting = NonNullable<Have["waitingFor"]> & { readonly code: ErrorCode };

export interface ApplierOptions {
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
  /** The artifact store once the bus is there. */
  readonly artifacts: () => ArtifactStore | undefined;
  readonly bus: () => MeshBus | undefined;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

/** One apply's bookkeeping: the modules failed so far, and the processes replaced without a gap. */
interface Pass {
  readonly desired: Desired;
  readonly plan: Plan;
  readonly failed: Map<string, Reason>;
  readonly waiting: Map<string, Waiting>;
  readonly replaced: Set<string>;
  fail(module: string, error: unknown): void;
}

export class Applier {
  readonly #o: ApplierOptions;
  /**
   * What the last finished apply wanted, and the composition it came from; undefined until one
   * finished. Not the one being applied: until its processes are started, the ones running are
   * the previous build's, and their health is that build's, not the new one's.
   */
  #desired: Desired | undefined;
  #composed: Composed | undefined;
  #applyErrors = new Map<string, Reason>();
  /** Modules that wait for a need the controller cannot seal yet, with what they wait for. */
  #waiting = new Map<string, Waiting>();

  constructor(options: ApplierOptions) {
    this.#o = options;
  }

  get desired(): Desired | undefined {
    return this.#desired;
  }
  /** The composition the last finished apply made the machine match. */
  get composed(): Composed | undefined {
    return this.#composed;
  }
  get applyErrors(): ReadonlyMap<string, Reason> {
    return this.#applyErrors;
  }
  get waiting(): ReadonlyMap<string, Waiting> {
    return this.#waiting;
  }

  /** Finds the processes a previous host started: adopts the recorded ones, ends the rest. */
  async recover(): Promise<void> {
    const { store, supervisor, marker, log } = this.#o;
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
        await supervisor.adopt(this.spec(resource), identity);
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
      await endGroup(stray, this.#o.graceMs);
    }
    store.save();
    await store.saved();
  }

  /** Makes the machine match `composed`. */
  async apply(composed: Composed): Promise<void> {
    const { store, provisioner } = this.#o;
    const desired = desiredOf(composed.resources, (m) => provisioner.configOf(m));
    const plan = planOf(desired, store.state);
    const failed = new Map<string, Reason>(
      [...desired.conflicts].map(([m, message]) => [
        m,
        { code: ErrorCode.COMPOSITION_REFUSED, message },
      ]),
    );
    const pass: Pass = {
      desired,
      plan,
      failed,
      waiting: new Map(),
      replaced: new Set(),
      fail: (module, error) => {
        const message = error instanceof Error ? error.message : String(error);
        if (!failed.has(module)) failed.set(module, { code: errorCodeOf(error), message });
        this.#o.log(`${module}: ${message}`);
      },
    };
    try {
      await this.#fetch(pass);
      this.#wait(pass);
      await this.#stop(pass);
      await this.#writeNeeds(pass);
      await this.#place(pass);
      await this.#start(pass);
    } finally {
      this.#desired = desired;
      this.#composed = composed;
    }
    this.#waiting = pass.waiting;
    this.#applyErrors = new Map([...failed].filter(([module]) => !pass.waiting.has(module)));
    await store.saved();
    // Archives nothing uses any more leave the cache once everything applied; while something
    // fails, the cache is left alone (what ran before may be needed again).
    if (failed.size === 0)
      await pruneCache(
        this.#o.root,
        new Set([...desired.deliveries.values()].map((d) => d.digest)),
      );
  }

  async #fetch(pass: Pass): Promise<void> {
    const limits = this.#o.archiveLimits ?? DEFAULT_ARCHIVE_LIMITS;
    const artifacts = this.#o.artifacts();
    for (const d of pass.plan.fetch) {
      if (pass.failed.has(d.module)) continue;
      try {
        checkBundlePath(this.#o.root, d.module, d.path);
        const file = await fetchVerified({
          root: this.#o.root,
          module: d.module,
          source: d.source,
          digest: d.digest,
          fetch: artifacts === undefined ? undefined : (digest, o) => artifacts.get(digest, o),
          signal: this.#o.signal,
        });
        await unpackBeside({ file, path: d.path, digest: d.digest, module: d.module, limits });
      } catch (error) {
        // The bus not there or not answering (a reload, JetStream's API without a responder)
        // says nothing about the build: the module waits for the bus, and what ran keeps running.
        if (artifacts === undefined || isBusTrouble(error)) {
          const why = error instanceof Error ? error.message : String(error);
          pass.waiting.set(d.module, {
            code: ErrorCode.BUS_UNAVAILABLE,
            what: `waiting for the bus to fetch ${d.module}'s bundle (${why.slice(0, 300)})`,
            fix: "nothing to do: the host fetches it again as soon as the bus answers; if it stays, check that the bus runs (`mesh up`)",
          });
        }
        pass.fail(d.module, error);
      }
    }
  }

  /** Whether a module waits for the bus (not for a secret or a credential). */
  get waitsForBus(): boolean {
    return waitsForBus(this.#waiting);
  }

  /**
   * A need the controller has nothing to seal for yet (a secret not set, a credential not yet
   * issued) is waited for, not failed: the module starts by itself once it arrives. Checked before
   * anything of the module stops; written after the stops.
   */
  #wait(pass: Pass): void {
    for (const need of pass.plan.writeNeeds) {
      if (need.sealed !== undefined || pass.waiting.has(need.module)) continue;
      const wait = waitingFor(need);
      pass.waiting.set(need.module, wait);
      pass.fail(need.module, new MeshError(ErrorCode.NOT_FOUND, `${wait.what}: ${wait.fix}`));
    }
  }

  /** Stops what goes, and removes the needs and bundles nothing wants any more. */
  async #stop(pass: Pass): Promise<void> {
    const { store, supervisor, root } = this.#o;
    const { plan, desired, failed } = pass;
    // The runtime is replaced without a gap: started anew beside the old one, in #start.
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
    for (const id of plan.removeNeeds) {
      const record = store.needs[id];
      if (record === undefined) continue;
      await removeNeed(root, record);
      store.forget("needs", id);
    }
    for (const path of plan.removeDeliveries) {
      await removeBundle(path);
      store.forget("deliveries", path);
    }
  }

  async #writeNeeds(pass: Pass): Promise<void> {
    const { store, root } = this.#o;
    for (const need of pass.plan.writeNeeds) {
      if (pass.failed.has(need.module)) continue;
      try {
        const known = Object.values(store.needs).some((n) => n.path === need.path);
        if (!known) {
          checkNeedPath(root, need);
          await refuseForeignFile(need);
          // Ours from here on, before the write: a crash in between must not make it foreign.
          store.record("needs", need.id, { module: need.module, path: need.path, fingerprint: "" });
          await store.saved();
        }
        await writeNeed({ root, need, privateKey: this.#o.keys.privateKey, known: true });
        store.record("needs", need.id, {
          module: need.module,
          path: need.path,
          fingerprint: fingerprintOf(need),
        });
      } catch (error) {
        pass.fail(need.module, error);
      }
    }
  }

  async #place(pass: Pass): Promise<void> {
    for (const d of pass.plan.place) {
      if (pass.failed.has(d.module)) continue;
      try {
        await placeBundle(d.path, d.digest);
        this.#o.store.record("deliveries", d.path, { module: d.module, digest: d.digest });
      } catch (error) {
        pass.fail(d.module, error);
      }
    }
  }

  async #start(pass: Pass): Promise<void> {
    const { store, supervisor } = this.#o;
    for (const id of pass.plan.start) {
      const want = pass.desired.processes.get(id);
      if (want === undefined || pass.failed.has(want.resource.module)) continue;
      if (pass.replaced.has(id)) {
        await this.#replaceRuntime(want);
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
      await supervisor.start(this.spec(want.resource), { restarts: 0 });
    }
  }

  /**
   * Starts the new runtime beside the old one, waits until it serves what the old one loaded, and
   * leaves the old one to drain (runtime-handover.ts).
   */
  async #replaceRuntime(want: { resource: ProcessResource; effective: string }): Promise<void> {
    const { store } = this.#o;
    await replaceRuntime({
      root: this.#o.root,
      node: this.#o.node,
      supervisor: this.#o.supervisor,
      spec: this.spec(want.resource),
      modules: toolModulesOf(want.resource),
      record: async () => {
        store.record("processes", want.resource.id, {
          module: want.resource.module,
          name: want.resource.name,
          effective: want.effective,
        });
        await store.saved();
      },
      readyMs: this.#o.runtimeHandover?.readyMs ?? DEFAULT_HANDOVER_MS,
      drainMs: this.#o.runtimeHandover?.drainMs ?? DEFAULT_DRAIN_MS,
      signal: this.#o.signal,
      bus: this.#o.bus,
      log: this.#o.log,
    });
  }

  spec(resource: ProcessResource): ProcessSpec {
    return {
      id: resource.id,
      module: resource.module,
      name: resource.name,
      argv: resource.run,
      // The runtime says which modules' tools loaded in a file the host reads for their health.
      // (one file per runtime process, `{pid}` being its own: two overlap when one replaces another).
      env:
        resource.id === RUNTIME_PROCESS_ID
          ? {
              ...resource.env,
              [Env.runtimeStatus]: join(this.#o.root, "run", RUNTIME_STATUS_NAME),
              ...(this.#o.runtimeIdleMs === undefined
                ? {}
                : { [Env.runtimeIdleMs]: String(this.#o.runtimeIdleMs) }),
            }
          : resource.env,
      // The runtime restarts at once after a healthy run, taken over by a standby booted ahead.
      ...(resource.id === RUNTIME_PROCESS_ID
        ? { restartAtOnce: true, standby: { [Env.runtimeStandby]: "1" } }
        : {}),
      cwd: resource.path,
      user: resource.user,
      code: resource.digest,
      marker: { name: HOST_PROCESS_MARKER, value: `${this.#o.marker}:${resource.id}` },
    };
  }
}

/** What a module waits for when its need has no sealed content yet, and what ends the wait. */
function waitingFor(need: NeedResource): Waiting {
  return need.kind === "secret"
    ? {
        code: ErrorCode.NOT_FOUND,
        what: `waiting for secret \`${need.name}\` of ${need.module}`,
        fix: `set it with \`mesh secret set ${need.module} ${need.name}\` (the value on stdin); the module starts by itself once it is set`,
      }
    : {
        code: ErrorCode.NOT_FOUND,
        what: `waiting for ${need.module}'s bus credential (${need.id}) from the controller`,
        fix: "nothing to do: the controller issues it on its next pass and the module starts by itself; if it stays, read the controller's log",
      };
}

/** Whether any of the waits is for the bus: decided on the wait's code, never on its words. */
export function waitsForBus(waiting: ReadonlyMap<string, Waiting>): boolean {
  for (const w of waiting.values()) if (w.code === ErrorCode.BUS_UNAVAILABLE) return true;
  return false;
}
