/**
 * The host: the node engine. One per machine. It makes the machine match its node's composition
 * (`mesh-composed.<node>`), resource by resource, and says truthfully what it runs.
 *
 * Lifecycle: `starting` (reads its state, finds the processes it started before, applies the
 * last composition it had — from disk, so it needs no bus for that), `running` (follows the bus
 * when it is there: the composition, config, provision asks, reports), `stopping`, `stopped`;
 * `failed` when it could not start. One `run()`; SIGTERM (an aborted signal) stops it
 * gracefully. Stopping the host leaves its processes running (the next host adopts them) unless
 * `stopProcessesOnStop` is set: upgrading or restarting the host must not restart the machine's
 * software.
 */
import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  ArtifactStore,
  KvBucket,
  MeshBus,
  publish,
  readCredential,
  serve,
  loadOrCreateNodeKeys,
  type NodeKeys,
  type Served,
} from "@mesh/bus";
import {
  Bucket,
  Env,
  ErrorCode,
  MeshError,
  PROVISION_SERVICE,
  RUNTIME_PROCESS_ID,
  ProvisionAsk,
  isMeshError,
  logsSubject,
  nodeKey,
  nodeModuleKey,
  provisionChangedSubject,
  provisionSubject,
  type Composed,
  type Credential,
  type Have,
  type NeedResource,
  type ProcessResource,
  type ProvisionAnswer,
} from "@mesh/protocol";
import { loadState, saveState, type AppliedState } from "./applied-state.js";
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
import { DEFAULT_HEALTH_RULES, moduleHealth, type HealthRules, type ToolsFacts } from "./health.js";
import {
  DEFAULT_DRAIN_MS,
  DEFAULT_HANDOVER_MS,
  RUNTIME_STATUS_NAME,
  mergedToolsFacts,
  pruneRuntimeStatus,
  readRuntimeStatus,
  replaceRuntime,
  runtimeStatusPath,
  toolModulesOf,
} from "./runtime-handover.js";
import { DEFAULT_TAIL_LIMITS, type TailLimits } from "./log-tail.js";
import { checkNeedPath, refuseForeignFile, removeNeed, writeNeed } from "./needs.js";
import { desiredOf, planOf, type Desired } from "./plan.js";
import { presenceOf } from "./presence.js";
import { endGroup, isAlive, processesMarked, type ProcessIdentity } from "./proc.js";
import { Provisioner } from "./provisioner.js";

type Json = ProvisionAnswer["value"];
import { DEFAULT_BACKOFF, Supervisor, type Backoff, type ProcessSpec } from "./supervisor.js";

import { fingerprintOf } from "@mesh/core";

export const HostState = {
  starting: "starting",
  running: "running",
  stopping: "stopping",
  stopped: "stopped",
  failed: "failed",
} as const;
export type HostState = (typeof HostState)[keyof typeof HostState];

/** The environment variable that marks a process as started by the host of one root. */
export const HOST_PROCESS_MARKER = "MESH_HOST_PROCESS";

export const HOST_VERSION = "0.1.0";

/** Between presence heartbeats, unless told otherwise; readers judge a node gone from it. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

export interface HostOptions {
  readonly node: string;
  /** Where the host keeps everything: state, cache, bundles, logs, the node key. */
  readonly root: string;
  /** The host's bus credential, or the path of its file. */
  readonly credential: Credential | string;
  readonly health?: Partial<HealthRules>;
  readonly backoff?: Backoff;
  /** Between TERM and KILL when a process is stopped. */
  readonly graceMs?: number;
  /**
   * A runtime being replaced: how long the new one has to load what the old one served before
   * the old one is stopped anyway, and how long the old one may drain (finish the calls it has)
   * between TERM and KILL. Defaults: 30 s, and the longest call deadline (300 s) and 10 s.
   */
  readonly runtimeHandover?: { readonly readyMs?: number; readonly drainMs?: number };
  /** Between presence heartbeats. */
  readonly heartbeatMs?: number;
  /** How often health, adopted processes and output files are looked at. */
  readonly pollMs?: number;
  /** How long after a failed apply the host tries again by itself. */
  readonly retryMs?: number;
  readonly archiveLimits?: ArchiveLimits;
  readonly tail?: TailLimits;
  readonly stopProcessesOnStop?: boolean;
  /** The machine's operator account and its home, said in the presence (the runtime runs as it). */
  readonly account?: { readonly name: string; readonly home?: string };
  /** Whether the machine is adopted (its own setup stays its administration's). */
  readonly adopted?: boolean;
  /** Where the host says what it does (default: stderr). */
  readonly log?: (line: string) => void;
}

export class Host implements AsyncDisposable {
  readonly node: string;
  readonly root: string;
  #state: HostState = HostState.stopped;
  readonly #options: HostOptions;
  readonly #rules: HealthRules;
  readonly #marker: string;
  readonly #log: (line: string) => void;
  #keys: NodeKeys | undefined;
  #applied: AppliedState | undefined;
  #supervisor: Supervisor | undefined;
  #provisioner: Provisioner | undefined;
  #bus: MeshBus | undefined;
  #artifacts: ArtifactStore | undefined;
  #have: KvBucket<Have> | undefined;
  #served: Served | undefined;
  #composed: Composed | undefined;
  #desired: Desired | undefined;
  #applyErrors = new Map<string, string>();
  /** Modules that wait for a need the controller cannot seal yet, with what they wait for. */
  #waiting = new Map<string, Waiting>();
  /** What was last written to mesh-have, by module. */
  readonly #reported = new Map<string, Have>();
  /**
   * The modules this host run has itself reported. A report restored from the previous run is
   * said again once, even unchanged (keeping its `since`): readers such as `mesh up` wait for a
   * report of now, not of the run before a crash.
   */
  readonly #confirmed = new Set<string>();
  readonly #restartBase = new Map<string, number>();
  #queue: Promise<void> = Promise.resolve();
  #pending = false;
  #reporting = false;
  #saving: Promise<void> = Promise.resolve();
  readonly #stop = new AbortController();
  #watches: AbortController | undefined;
  /** The connection being made, and the watch loops running: a stop waits for them before it
   * closes the bus, or a watch still starting leaks the client's heartbeat timer. */
  #connecting: Promise<void> | undefined;
  readonly #following = new Set<Promise<void>>();
  readonly #timers: NodeJS.Timeout[] = [];

  private constructor(options: HostOptions) {
    this.#options = options;
    this.node = nodeKey(options.node);
    this.root = resolve(options.root);
    this.#rules = { ...DEFAULT_HEALTH_RULES, ...options.health };
    this.#marker = createHash("sha256").update(this.root).digest("hex").slice(0, 16);
    this.#log =
      options.log ?? ((line) => process.stderr.write(`mesh host ${this.node}: ${line}\n`));
  }

  static create(options: HostOptions): Host {
    return new Host(options);
  }

  get state(): HostState {
    return this.#state;
  }

  /** The processes running now, by resource id. */
  processes(): Map<string, ProcessIdentity> {
    const out = new Map<string, ProcessIdentity>();
    for (const id of this.#supervisor?.ids() ?? []) {
      const identity = this.#supervisor?.identity(id);
      if (identity !== undefined) out.set(id, identity);
    }
    return out;
  }

  /** Resolves once every apply asked for so far is done. */
  async settled(): Promise<void> {
    let seen: Promise<void> | undefined;
    while (seen !== this.#queue) {
      seen = this.#queue;
      await seen;
    }
  }

  /** Runs until the signal aborts (or stop()); resolves when stopped. */
  async run(options: { signal?: AbortSignal } = {}): Promise<void> {
    const signal = options.signal;
    const onAbort = (): void => this.#stop.abort();
    if (signal?.aborted === true) return;
    signal?.addEventListener("abort", onAbort, { once: true });
    this.#state = HostState.starting;
    try {
      await this.#start();
    } catch (error) {
      this.#state = HostState.failed;
      signal?.removeEventListener("abort", onAbort);
      await this.#shutdown();
      this.#state = HostState.failed;
      throw error;
    }
    this.#state = HostState.running;
    await new Promise<void>((r) => {
      if (this.#stop.signal.aborted) r();
      else this.#stop.signal.addEventListener("abort", () => r(), { once: true });
    });
    signal?.removeEventListener("abort", onAbort);
    this.#state = HostState.stopping;
    await this.#shutdown();
    this.#state = HostState.stopped;
  }

  /** Asks run() to stop, and waits until every apply in progress is done. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.settled();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  // -------------------------------------------------------------------------------------------

  async #start(): Promise<void> {
    // 0755: processes that run as other users reach their bundles through it. What is private
    // (state, cache, the node key) is 0700/0600 inside.
    await mkdir(this.root, { recursive: true, mode: 0o755 });
    // The runtime writes its status file here (it may run as the operator account: 0755).
    await mkdir(join(this.root, "run"), { recursive: true, mode: 0o755 });
    this.#keys = await loadOrCreateNodeKeys(`${this.root}/node.key`);
    this.#applied = await loadState(this.root);
    const credential =
      typeof this.#options.credential === "string"
        ? await readCredential(this.#options.credential)
        : this.#options.credential;
    this.#provisioner = new Provisioner({
      node: this.node,
      servers: credential.servers,
      onChanged: (changed) => {
        if (this.#bus !== undefined)
          publish(this.#bus, provisionChangedSubject(this.node), changed);
      },
    });
    const pollMs = this.#options.pollMs ?? 250;
    this.#supervisor = new Supervisor({
      root: this.root,
      backoff: this.#options.backoff ?? DEFAULT_BACKOFF,
      healthyMs: this.#rules.healthyMs,
      graceMs: this.#options.graceMs ?? 10_000,
      tail: this.#options.tail ?? DEFAULT_TAIL_LIMITS,
      pollMs,
      onSpawned: (id, identity) => {
        // What a crashed runtime wrote says nothing now.
        if (id === RUNTIME_PROCESS_ID) void pruneRuntimeStatus(this.root, this.#supervisor);
        const record = this.#applied?.processes[id];
        if (this.#applied !== undefined && record !== undefined) {
          this.#applied.processes[id] = {
            ...record,
            pid: identity.pid,
            startTime: identity.startTime,
          };
          this.#save();
        }
      },
      onExit: (id, exit) => this.#log(`${exit.reason}; restarting in ${exit.delayMs} ms`),
      onLine: (module, processName, stream, line) => {
        if (this.#bus === undefined) return;
        publish(this.#bus, logsSubject(this.node, module), {
          process: processName,
          stream,
          line,
          at: new Date().toISOString(),
        });
      },
    });
    await this.#recover();
    for (const [key, value] of Object.entries(this.#applied.config))
      this.#provisioner.setConfig(key, value as Json);
    this.#composed = this.#applied.composed;
    this.#provisioner.setModules(this.#composed?.modules);
    this.#reconcile();
    await this.settled();

    const tick = setInterval(() => void this.#report(), pollMs);
    const retry = setInterval(() => {
      if (this.#applyErrors.size > 0) this.#reconcile();
    }, this.#options.retryMs ?? 30_000);
    this.#timers.push(tick, retry);
    this.#connecting = this.#connect(credential);
  }

  /** Finds the processes a previous host started: adopts the recorded ones, ends the rest. */
  async #recover(): Promise<void> {
    const applied = this.#applied as AppliedState;
    const supervisor = this.#supervisor as Supervisor;
    const resources = new Map(
      (applied.composed?.resources ?? []).flatMap((r) =>
        r.type === "process" ? [[r.id, r] as const] : [],
      ),
    );
    const marked = await processesMarked(HOST_PROCESS_MARKER, `${this.#marker}:`);
    const adopted = new Set<number>();
    for (const [id, record] of Object.entries(applied.processes)) {
      const resource = resources.get(id);
      const identity =
        record.pid !== undefined && record.startTime !== undefined
          ? { pid: record.pid, startTime: record.startTime }
          : undefined;
      if (identity !== undefined && resource !== undefined && (await isAlive(identity))) {
        await supervisor.adopt(this.#spec(resource), identity);
        adopted.add(identity.pid);
        this.#log(`adopted ${id} (pid ${identity.pid})`);
      } else {
        // Gone, never spawned, or not in the composition it came from: started again if wanted.
        delete applied.processes[id];
      }
    }
    for (const stray of marked) {
      if (adopted.has(stray.pid)) continue;
      this.#log(
        `ending ${stray.value.slice(this.#marker.length + 1)} (pid ${stray.pid}): started by an earlier host that did not record it`,
      );
      await endGroup(stray, this.#options.graceMs ?? 10_000);
    }
    this.#save();
    await this.#saving;
  }

  async #connect(credential: Credential): Promise<void> {
    let bus: MeshBus;
    try {
      // The bus's own retry loop ends on the stop signal, and closes what connects after it.
      bus = await MeshBus.connect(credential, {
        waitForBus: true,
        name: `${this.node}.host`,
        signal: this.#stop.signal,
      });
    } catch (error) {
      if (!this.#stop.signal.aborted)
        this.#log(`cannot reach the bus: ${(error as Error).message}`);
      return;
    }
    if (this.#stop.signal.aborted) {
      await bus.close();
      return;
    }
    this.#bus = bus;
    this.#log(`connected to the bus`);
    try {
      this.#artifacts = await ArtifactStore.open(bus, { signal: this.#stop.signal });
      this.#have = await KvBucket.open(bus, Bucket.have);
      this.#served = await serve(bus, {
        name: PROVISION_SERVICE,
        version: HOST_VERSION,
        description: `answers ${this.node}'s runtime's provision asks`,
        endpoints: [
          {
            name: "provision",
            subject: provisionSubject(this.node),
            // The answer is synchronous (a lookup in what the host holds); serve() wants a promise.
            handler: (request) => {
              const ask = ProvisionAsk.safeParse(request.json());
              if (!ask.success) {
                throw new MeshError(
                  ErrorCode.INVALID_INPUT,
                  `a provision ask is {module, kind, key} with kind config, bound or secret; got ${JSON.stringify(request.json())}`,
                );
              }
              return Promise.resolve((this.#provisioner as Provisioner).answer(ask.data));
            },
          },
        ],
        onRejected: (why, subject) => this.#log(`rejected a provision ask on ${subject}: ${why}`),
        onInternalError: (error) => this.#log(`provision ask failed: ${String(error)}`),
      });
    } catch (error) {
      this.#log(`cannot use the bus: ${(error as Error).message}`);
    }
    const heartbeat = (): void => void this.#heartbeat();
    heartbeat();
    const timer = setInterval(heartbeat, this.#options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    this.#timers.push(timer);
    await this.#restoreHave();
    this.#startWatches();
    void (async () => {
      for await (const event of bus.events()) {
        if (event.type === "reconnected") {
          this.#log("the bus is back");
          this.#reported.clear(); // say it all again: what was written while away may be lost
          heartbeat();
          this.#startWatches();
        } else if (event.type === "disconnected")
          this.#log("lost the bus; what runs keeps running");
      }
    })();
  }

  /**
   * What the previous host said of each module, so `restarts` counts on and `since` stays
   * when the health did not change.
   */
  async #restoreHave(): Promise<void> {
    const have = this.#have;
    if (have === undefined) return;
    for (const module of this.#desired?.modules.keys() ?? []) {
      try {
        const last = await have.get(nodeModuleKey(this.node, module), {
          signal: this.#stop.signal,
        });
        if (last === undefined) continue;
        this.#restartBase.set(module, last.value.restarts);
        if (!this.#reported.has(module)) this.#reported.set(module, last.value);
      } catch (error) {
        this.#log(`have of ${module} not read back: ${(error as Error).message}`);
      }
    }
  }

  /** (Re)starts the watches of the composition and of config. */
  #startWatches(): void {
    this.#watches?.abort();
    const watches = new AbortController();
    this.#watches = watches;
    const signal = AbortSignal.any([watches.signal, this.#stop.signal]);
    const bus = this.#bus as MeshBus;
    void this.#follow("the composition", signal, async () => {
      const composed = await KvBucket.open(bus, Bucket.composed);
      for await (const event of composed.watch({ key: nodeKey(this.node), signal })) {
        if (event.type === "put") this.#setComposed(event.value);
        else if (event.type === "delete")
          this.#setComposed({ node: this.node, resources: [], fingerprint: "none" });
        else if (event.type === "invalid")
          this.#log(`ignored an invalid composition: ${event.problem.message}`);
      }
    });
    void this.#follow("config", signal, async () => {
      const config = await KvBucket.open(bus, Bucket.config);
      const provisioner = this.#provisioner as Provisioner;
      const applied = this.#applied as AppliedState;
      // Keys deleted while the host was away are not handed by a new watch: what it does not
      // hand by its `current` marker is gone.
      const seen = new Set<string>();
      let current = false;
      for await (const event of config.watch({ signal })) {
        if (event.type === "current") {
          current = true;
          provisioner.retainConfig(seen);
          for (const key of Object.keys(applied.config))
            if (!seen.has(key)) delete applied.config[key];
        } else if (event.type === "put") {
          if (!current) seen.add(event.key);
          provisioner.setConfig(event.key, event.value.value);
          applied.config[event.key] = event.value.value;
        } else if (event.type === "delete") {
          provisioner.setConfig(event.key, undefined);
          delete applied.config[event.key];
        }
        if (event.type !== "invalid") {
          this.#save();
          this.#reconcile();
        }
      }
    });
  }

  #follow(what: string, signal: AbortSignal, fn: () => Promise<void>): Promise<void> {
    const loop = this.#followLoop(what, signal, fn);
    this.#following.add(loop);
    void loop.finally(() => this.#following.delete(loop));
    return loop;
  }

  async #followLoop(what: string, signal: AbortSignal, fn: () => Promise<void>): Promise<void> {
    while (!signal.aborted) {
      try {
        await fn();
      } catch (error) {
        if (signal.aborted || isMeshError(error, ErrorCode.ABORTED)) return;
        this.#log(`watching ${what} failed (${(error as Error).message}); watching again`);
      }
      await new Promise((r) => setTimeout(r, 1_000).unref());
    }
  }

  #setComposed(composed: Composed): void {
    if (composed.node !== this.node) {
      this.#log(`ignored a composition for ${composed.node}: this is ${this.node}`);
      return;
    }
    this.#composed = composed;
    (this.#applied as AppliedState).composed = composed;
    this.#save();
    (this.#provisioner as Provisioner).setModules(composed.modules);
    this.#reconcile();
  }

  async #heartbeat(): Promise<void> {
    const bus = this.#bus;
    if (bus === undefined || this.#keys === undefined) return;
    try {
      const presence = await KvBucket.open(bus, Bucket.presence);
      await presence.put(
        nodeKey(this.node),
        presenceOf({
          node: this.node,
          publicKey: this.#keys.publicKey,
          version: HOST_VERSION,
          now: new Date(),
          root: this.root,
          ...(this.#options.account === undefined ? {} : { account: this.#options.account }),
          ...(this.#options.adopted === undefined ? {} : { adopted: this.#options.adopted }),
        }),
        { signal: this.#stop.signal },
      );
    } catch (error) {
      if (!this.#stop.signal.aborted)
        this.#log(`presence not written: ${(error as Error).message}`);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Applying

  /** Asks for an apply; several asks while one runs make one more. */
  #reconcile(): void {
    if (this.#pending) return;
    this.#pending = true;
    this.#queue = this.#queue.then(async () => {
      this.#pending = false;
      if (this.#stop.signal.aborted) return;
      try {
        await this.#apply();
      } catch (error) {
        this.#log(`apply failed: ${(error as Error).stack ?? String(error)}`);
      }
      await this.#report();
    });
  }

  async #apply(): Promise<void> {
    const composed = this.#composed;
    const applied = this.#applied as AppliedState;
    const supervisor = this.#supervisor as Supervisor;
    const provisioner = this.#provisioner as Provisioner;
    if (composed === undefined) return;
    const desired = desiredOf(composed.resources, (m) => provisioner.configOf(m));
    this.#desired = desired;
    const plan = planOf(desired, applied);
    const failed = new Map(desired.conflicts);
    const fail = (module: string, error: unknown): void => {
      const message = error instanceof Error ? error.message : String(error);
      if (!failed.has(module)) failed.set(module, message);
      this.#log(`${module}: ${message}`);
    };
    const limits = this.#options.archiveLimits ?? DEFAULT_ARCHIVE_LIMITS;
    const artifacts = this.#artifacts;
    for (const d of plan.fetch) {
      if (failed.has(d.module)) continue;
      try {
        checkBundlePath(this.root, d.module, d.path);
        const file = await fetchVerified({
          root: this.root,
          module: d.module,
          source: d.source,
          digest: d.digest,
          fetch: artifacts === undefined ? undefined : (digest, o) => artifacts.get(digest, o),
          signal: this.#stop.signal,
        });
        await unpackBeside({ file, path: d.path, digest: d.digest, module: d.module, limits });
      } catch (error) {
        fail(d.module, error);
      }
    }
    // A need the controller has nothing to seal for yet (a secret not set, a credential not yet
    // issued) is waited for, not failed: the module starts by itself once it arrives.
    const waiting = new Map<string, Waiting>();
    for (const need of plan.writeNeeds) {
      // Checked before anything of the module stops; written after the stops.
      if (need.sealed !== undefined || waiting.has(need.module)) continue;
      const wait = waitingFor(need);
      waiting.set(need.module, wait);
      fail(need.module, new MeshError(ErrorCode.NOT_FOUND, `${wait.what}: ${wait.fix}`));
    }
    // The runtime is replaced without a gap: started anew beside the old one, below.
    const replaced = new Set(
      plan.stop.filter(
        (id) =>
          id === RUNTIME_PROCESS_ID &&
          plan.start.includes(id) &&
          supervisor.status(id)?.running === true,
      ),
    );
    for (const id of plan.stop) {
      const record = applied.processes[id];
      if (record === undefined || replaced.has(id)) continue;
      if (failed.has(record.module) && desired.processes.has(id)) continue; // keeps what runs
      await supervisor.stop(id);
      delete applied.processes[id];
      this.#save();
    }
    for (const id of plan.removeNeeds) {
      const record = applied.needs[id];
      if (record === undefined) continue;
      await removeNeed(this.root, record);
      delete applied.needs[id];
      this.#save();
    }
    for (const path of plan.removeDeliveries) {
      await removeBundle(path);
      delete applied.deliveries[path];
      this.#save();
    }
    for (const need of plan.writeNeeds) {
      if (failed.has(need.module)) continue;
      try {
        const known = Object.values(applied.needs).some((n) => n.path === need.path);
        if (!known) {
          checkNeedPath(this.root, need);
          await refuseForeignFile(need);
          // Ours from here on, before the write: a crash in between must not make it foreign.
          applied.needs[need.id] = { module: need.module, path: need.path, fingerprint: "" };
          this.#save();
          await this.#saving;
        }
        await writeNeed({
          root: this.root,
          need,
          privateKey: (this.#keys as NodeKeys).privateKey,
          known: true,
        });
        applied.needs[need.id] = {
          module: need.module,
          path: need.path,
          fingerprint: fingerprintOf(need),
        };
        this.#save();
      } catch (error) {
        fail(need.module, error);
      }
    }
    for (const d of plan.place) {
      if (failed.has(d.module)) continue;
      try {
        await placeBundle(d.path, d.digest);
        applied.deliveries[d.path] = { module: d.module, digest: d.digest };
        this.#save();
      } catch (error) {
        fail(d.module, error);
      }
    }
    for (const id of plan.start) {
      const want = desired.processes.get(id);
      if (want === undefined || failed.has(want.resource.module)) continue;
      if (replaced.has(id)) {
        await this.#replaceRuntime(want);
        continue;
      }
      if (supervisor.status(id) !== undefined) continue; // kept running above
      // Recorded before the spawn: a crash between the two leaves a marked process the next
      // host ends, never one it does not know of.
      applied.processes[id] = {
        module: want.resource.module,
        name: want.resource.name,
        effective: want.effective,
      };
      this.#save();
      await this.#saving;
      await supervisor.start(this.#spec(want.resource), { restarts: 0 });
    }
    this.#waiting = waiting;
    this.#applyErrors = new Map([...failed].filter(([module]) => !waiting.has(module)));
    await this.#saving;
    // Archives nothing uses any more leave the cache once everything applied; while something
    // fails, the cache is left alone (what ran before may be needed again).
    if (failed.size === 0)
      await pruneCache(this.root, new Set([...desired.deliveries.values()].map((d) => d.digest)));
  }

  /**
   * Starts the new runtime beside the old one, waits until it serves what the old one loaded, and
   * leaves the old one to drain (runtime-handover.ts).
   */
  async #replaceRuntime(want: { resource: ProcessResource; effective: string }): Promise<void> {
    const applied = this.#applied as AppliedState;
    await replaceRuntime({
      root: this.root,
      node: this.node,
      supervisor: this.#supervisor as Supervisor,
      spec: this.#spec(want.resource),
      modules: toolModulesOf(want.resource),
      record: async () => {
        applied.processes[want.resource.id] = {
          module: want.resource.module,
          name: want.resource.name,
          effective: want.effective,
        };
        this.#save();
        await this.#saving;
      },
      readyMs: this.#options.runtimeHandover?.readyMs ?? DEFAULT_HANDOVER_MS,
      drainMs: this.#options.runtimeHandover?.drainMs ?? DEFAULT_DRAIN_MS,
      signal: this.#stop.signal,
      bus: () => this.#bus,
      log: this.#log,
    });
  }

  /** Where the runtime with `pid` writes each module's load result (its status file). */
  runtimeStatusFile(pid: number): string {
    return runtimeStatusPath(this.root, pid);
  }

  #spec(resource: ProcessResource): ProcessSpec {
    return {
      id: resource.id,
      module: resource.module,
      name: resource.name,
      argv: resource.run,
      // The runtime says which modules' tools loaded in a file the host reads for their health.
      // (one file per runtime process, `{pid}` being its own: two overlap when one replaces another).
      env:
        resource.id === RUNTIME_PROCESS_ID
          ? { ...resource.env, [Env.runtimeStatus]: join(this.root, "run", RUNTIME_STATUS_NAME) }
          : resource.env,
      // The runtime restarts at once after a healthy run, taken over by a standby booted ahead.
      ...(resource.id === RUNTIME_PROCESS_ID
        ? { restartAtOnce: true, standby: { [Env.runtimeStandby]: "1" } }
        : {}),
      cwd: resource.path,
      user: resource.user,
      marker: { name: HOST_PROCESS_MARKER, value: `${this.#marker}:${resource.id}` },
    };
  }

  #save(): void {
    const applied = this.#applied;
    if (applied === undefined) return;
    this.#saving = this.#saving
      .then(() => saveState(this.root, applied))
      .catch((error: unknown) => this.#log(`cannot write the applied state: ${String(error)}`));
  }

  // -------------------------------------------------------------------------------------------
  // Reporting

  async #report(): Promise<void> {
    if (this.#reporting) return; // the tick and an apply may both ask; one at a time
    this.#reporting = true;
    try {
      await this.#reportNow();
    } finally {
      this.#reporting = false;
    }
  }

  async #reportNow(): Promise<void> {
    const desired = this.#desired;
    const supervisor = this.#supervisor;
    if (desired === undefined || supervisor === undefined) return;
    const now = Date.now();
    const modules = new Set([...desired.modules.keys()]);
    const tools = await this.#toolsStatus(desired, supervisor);
    for (const [module, fingerprint] of desired.modules) {
      const ids = [...desired.processes.keys()].filter(
        (id) => desired.processes.get(id)?.resource.module === module,
      );
      const statuses = ids.map((id) => supervisor.status(id));
      const facts = statuses.map((s) => ({
        running: s?.running ?? false,
        since: s?.since,
        exits: s?.exits ?? [],
        lastError: s?.lastError,
      }));
      const { health, lastError } = moduleHealth({
        applyError: this.#applyErrors.get(module),
        waitingFor: this.#waiting.get(module),
        processes: facts,
        now,
        rules: this.#rules,
        ...(tools.has(module) ? { tools: tools.get(module) } : {}),
      });
      const restarts =
        (this.#restartBase.get(module) ?? 0) + statuses.reduce((n, s) => n + (s?.restarts ?? 0), 0);
      const build = this.#composed?.modules?.[module]?.build;
      const waitingFor = this.#waiting.get(module);
      await this.#write(module, { build, fingerprint, health, restarts, lastError, waitingFor });
    }
    for (const module of [...this.#reported.keys()]) {
      if (modules.has(module)) continue;
      const last = this.#reported.get(module) as Have;
      if (last.health !== "stopped")
        await this.#write(module, {
          build: last.build,
          fingerprint: last.fingerprint,
          health: "stopped",
          restarts: last.restarts,
          lastError: undefined,
        });
    }
  }

  /**
   * The load result of each module the runtime serves here, from its status file: undefined for a
   * module it has not reported yet, or when the file is not from the runtime running now.
   */
  async #toolsStatus(
    desired: Desired,
    supervisor: Supervisor,
  ): Promise<Map<string, ToolsFacts | undefined>> {
    const out = new Map<string, ToolsFacts | undefined>();
    const runtime = desired.processes.get(RUNTIME_PROCESS_ID)?.resource;
    if (runtime === undefined) return out;
    for (const module of toolModulesOf(runtime)) out.set(module, undefined);
    const current = await readRuntimeStatus(
      this.root,
      supervisor.identity(RUNTIME_PROCESS_ID)?.pid,
    );
    const retiring = await readRuntimeStatus(
      this.root,
      supervisor.retiring(RUNTIME_PROCESS_ID)?.pid,
    );
    for (const module of out.keys()) out.set(module, mergedToolsFacts(current, retiring, module));
    return out;
  }

  async #write(
    module: string,
    now: Omit<Have, "since" | "build" | "lastError" | "waitingFor"> & {
      build: string | undefined;
      lastError: string | undefined;
      waitingFor?: Waiting | undefined;
    },
  ): Promise<void> {
    const have = this.#have;
    if (have === undefined) return;
    const last = this.#reported.get(module);
    const same =
      last !== undefined &&
      this.#confirmed.has(module) &&
      last.health === now.health &&
      last.build === now.build &&
      last.fingerprint === now.fingerprint &&
      last.restarts === now.restarts &&
      last.lastError === now.lastError &&
      last.waitingFor?.what === now.waitingFor?.what;
    if (same) return;
    const value: Have = {
      ...(now.build === undefined ? {} : { build: now.build }),
      fingerprint: now.fingerprint,
      health: now.health,
      since:
        last !== undefined && last.health === now.health ? last.since : new Date().toISOString(),
      restarts: now.restarts,
      ...(now.lastError === undefined ? {} : { lastError: now.lastError.slice(0, 2000) }),
      ...(now.waitingFor === undefined ? {} : { waitingFor: now.waitingFor }),
    };
    try {
      await have.put(nodeModuleKey(this.node, module), value, { signal: this.#stop.signal });
      this.#reported.set(module, value);
      this.#confirmed.add(module);
    } catch (error) {
      if (!this.#stop.signal.aborted)
        this.#log(`have of ${module} not written: ${(error as Error).message}`);
    }
  }

  async #shutdown(): Promise<void> {
    for (const timer of this.#timers) clearInterval(timer);
    this.#watches?.abort();
    await this.#connecting?.catch(() => undefined);
    await Promise.allSettled([...this.#following]);
    await this.#queue.catch(() => undefined);
    if (this.#supervisor !== undefined) {
      if (this.#options.stopProcessesOnStop === true) {
        await this.#supervisor.stopAll();
        if (this.#applied !== undefined) {
          this.#applied.processes = {};
          this.#save();
        }
      } else await this.#supervisor[Symbol.asyncDispose]();
    }
    await this.#saving;
    await this.#served?.stop().catch(() => undefined);
    await this.#bus?.close();
  }
}

/** What a module waits for before it can start, and what ends the wait. */
type Waiting = NonNullable<Have["waitingFor"]>;

/** What a module waits for when its need has no sealed content yet, and what ends the wait. */
function waitingFor(need: NeedResource): Waiting {
  return need.kind === "secret"
    ? {
        what: `waiting for secret \`${need.name}\` of ${need.module}`,
        fix: `set it with \`mesh secret set ${need.module} ${need.name}\` (the value on stdin); the module starts by itself once it is set`,
      }
    : {
        what: `waiting for ${need.module}'s bus credential (${need.id}) from the controller`,
        fix: "nothing to do: the controller issues it on its next pass and the module starts by itself; if it stays, read the controller's log",
      };
}
