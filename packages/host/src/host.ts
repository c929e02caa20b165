/**
 * The host: the node engine. One per machine. It makes the machine match its node's composition
 * (`mesh-composed.<node>`), resource by resource, and says truthfully what it runs.
 *
 * It is a reconciler (the bus's `reconciler()`) of three keys: its `composition` (applied, when
 * it or a config value it reads changes, again after a delay while an apply failed or a module
 * waits for a bus that is there but did not answer, and after a backoff when a pass threw), its
 * `have` (reported every `pollMs`: health moves with time) and its `presence` (said every
 * heartbeat once the bus side is open). Each waits on the reconciler's queue, never on a timer
 * of the host's; a key is never worked twice at once, and one does not wait for another.
 *
 * Lifecycle: `starting` (reads its state, finds the processes it started before, applies the
 * last composition it had — from disk, so it needs no bus for that), `running` (follows the bus
 * when it is there: the composition, config, provision asks, reports), `stopping`, `stopped`;
 * `failed` when it could not start. One `run()`; SIGTERM (an aborted signal) stops it
 * gracefully. Stopping the host leaves its processes running (the next host adopts them) unless
 * `stopProcessesOnStop` is set: upgrading or restarting the host must not restart the machine's
 * software.
 *
 * The parts: `apply.ts` (a pass over the resource kinds of `kinds/`), `report.ts` (mesh-have),
 * `connection.ts` (the bus side) and `watches.ts` (the reconciler's sources: composition and
 * config); this file only orchestrates them. `Host.create()` does the async set-up, so every part
 * exists from the start.
 */
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  loadOrCreateNodeKeys,
  publish,
  readCredential,
  reconciler,
  type NodeKeys,
  type Reconciled,
  type Reconciler,
  type SourceChange,
} from "@mesh/bus";
import { DaemonLife, Lifecycle, aborted, type Daemon, type RunOptions } from "@mesh/kit";
import {
  ErrorCode,
  HOST_MODULE,
  nodeKey,
  provisionChangedSubject,
  provisionModuleChangedSubject,
  type Composed,
  type Credential,
  type ProvisionAnswer,
} from "@mesh/protocol";
import { AppliedStore } from "./applied-state.js";
import type { Applier } from "./apply.js";
import { Connection, DEFAULT_HEARTBEAT_MS } from "./connection.js";
import { OwnCredential } from "./own-credential.js";
import { DEFAULT_HEALTH_RULES } from "./health.js";
import { RefusedHold } from "./composition-read.js";
import { HostCondition, HostConditions } from "./host-conditions.js";
import { HostLock } from "./host-lock.js";
import { HostOutput } from "./host-output.js";
import { applierFor, supervisorFor } from "./host-parts.js";
import type { ProcessIdentity } from "./proc.js";
import { Provisioner } from "./provisioner.js";
import { Reporter } from "./report.js";
import { runtimeStatusPath } from "./runtime-handover.js";
import type { Supervisor } from "./supervisor.js";
import { BusSessions, composedOf, watchSources, type WatchSources } from "./watches.js";
import {
  BUS_RETRY_MS,
  DEFAULT_POLL_MS,
  DEFAULT_RETRY_MS,
  HostKey,
  type HostOptions,
} from "./host-options.js";

export { HOST_PROCESS_MARKER } from "./kinds/process.js";
export { DEFAULT_HEARTBEAT_MS, HOST_VERSION } from "./connection.js";
export type { HostOptions };

type Json = ProvisionAnswer["value"];

/** What Host.create() reads before the host exists. */
interface Loaded {
  readonly options: HostOptions;
  readonly node: string;
  readonly root: string;
  readonly log: (line: string) => void;
  readonly keys: NodeKeys;
  readonly store: AppliedStore;
  readonly credential: Credential;
}

export class Host implements Daemon, AsyncDisposable {
  readonly node: string;
  readonly root: string;
  readonly #life: DaemonLife;
  readonly #options: HostOptions;
  readonly #credential: Credential;
  readonly #log: (line: string) => void;
  readonly #store: AppliedStore;
  readonly #supervisor: Supervisor;
  readonly #provisioner: Provisioner;
  readonly #applier: Applier;
  readonly #reporter: Reporter;
  readonly #connection: Connection;
  readonly #sessions = new BusSessions();
  readonly #reconciler: Reconciler<WatchSources, HostKey>;
  readonly #own: OwnCredential;
  readonly #stop = new AbortController();
  /** The reconciler's run, once started: a stop waits for its pass in progress. */
  #reconciling: Promise<void> | undefined;
  #reconcilerRuns = false;
  /** Applies asked for (the first one, a change of the composition or of config), … */
  #asked = 0;
  /** … and how many of them the last finished pass covered: settled() waits for the two to meet. */
  #appliedUpTo = 0;
  #passEnded: Array<() => void> = [];
  /** The connection being made: a stop waits for it before it closes the bus. */
  #connecting: Promise<void> = Promise.resolve();
  readonly #output: HostOutput;
  readonly #conditions: HostConditions;
  /** A composition this host cannot apply (decision 0202): only its host build is taken. */
  readonly #held: RefusedHold;
  #lock: HostLock | undefined;
  /** Letting go of the node (a handover, or the launcher gone): the processes stay as they are. */
  #leaving = false;
  /** Resolved once a heartbeat was written (the bus side is open and heard). */
  #beat: () => void = () => undefined;
  readonly #beaten = new Promise<void>((resolve) => (this.#beat = resolve));
  #ran: () => void = () => undefined;
  readonly #running = new Promise<void>((resolve) => (this.#ran = resolve));

  private constructor(loaded: Loaded) {
    const { options, node, root, log, store } = loaded;
    this.node = node;
    this.root = root;
    this.#options = options;
    this.#credential = loaded.credential;
    this.#log = log;
    this.#life = new DaemonLife({ initial: Lifecycle.stopped, log });
    this.#store = store;
    const signal = this.#stop.signal;
    const bus = (): Connection["bus"] => this.#connection.bus;
    this.#output = new HostOutput({ node, root, bus, log });
    this.#conditions = new HostConditions({ node, bus, log });
    this.#held = new RefusedHold({
      node,
      say: (message, code) => this.#conditions.say(HostCondition.version, `${message} [${code}]`),
      resolve: (message, unknown) =>
        this.#conditions.resolve(HostCondition.version, message, unknown),
    });
    this.#provisioner = new Provisioner({
      node,
      servers: loaded.credential.servers,
      onChanged: (changed) => {
        const bus = this.#connection.bus;
        if (bus === undefined) return;
        publish(bus, provisionChangedSubject(node), changed);
        // The module's own processes hear of their own values only.
        publish(bus, provisionModuleChangedSubject(node, changed.module), changed);
      },
    });
    this.#supervisor = supervisorFor({ options, root, store, output: this.#output, log });
    this.#applier = applierFor({
      ...loaded,
      supervisor: this.#supervisor,
      provisioner: this.#provisioner,
      artifacts: () => this.#connection.artifacts,
      bus,
      signal,
    });
    this.#reporter = new Reporter({
      node,
      root,
      rules: { ...DEFAULT_HEALTH_RULES, ...options.health },
      supervisor: this.#supervisor,
      applied: () => ({
        desired: this.#applier.desired,
        composed: this.#applier.composed,
        applyErrors: this.#applier.applyErrors,
        waiting: this.#applier.waiting,
      }),
      have: () => this.#connection.have,
      connected: () => this.#connection.connected,
      configOf: (module) => this.#provisioner.configOf(module),
      signal,
      log,
    });
    this.#reconciler = this.#reconcilerOf(loaded);
    this.#own = new OwnCredential({
      node,
      privateKey: loaded.keys.privateKey,
      ...(typeof options.credential === "string" ? { path: options.credential } : {}),
      log,
    });
    this.#connection = this.#connectionOf(loaded);
    this.#followLauncher(options);
  }

  /**
   * What the host's launcher asks (decision 0200): let go of the node for a handover (`park`), or
   * try again once a build did not take the node over; a launcher gone is a let-go too.
   */
  #followLauncher(options: HostOptions): void {
    const link = options.launcher;
    if (link === undefined) return;
    link.onPark(() => this.#letGo("handing the node over to a new host build"));
    link.onNotUpgraded(() => this.#reconciler.enqueue(HostKey.composition));
    const gone = (): void => this.#letGo("its launcher is gone");
    if (link.gone.aborted) gone();
    else link.gone.addEventListener("abort", gone, { once: true });
    if (options.resumedFrom !== undefined) this.#conditions.resumedAfter(options.resumedFrom);
  }

  /** Stops the host, leaving every process running for the host that takes the node next. */
  #letGo(why: string): void {
    if (this.#stop.signal.aborted) return;
    this.#log(`letting go of the node: ${why}`);
    this.#leaving = true;
    this.#stop.abort();
  }

  /** Whether the run ended by letting go of the node (not by a stop). */
  get leftNode(): boolean {
    return this.#leaving;
  }

  /** The bus side: connecting, presence, reconnecting; the watches start on each connection. */
  #connectionOf({ options, node, root, log, keys }: Loaded): Connection {
    const signal = this.#stop.signal;
    return new Connection({
      node,
      root,
      keys,
      provisioner: this.#provisioner,
      ...(options.busBackoff === undefined ? {} : { openBackoff: options.busBackoff }),
      ...(options.account === undefined ? {} : { account: options.account }),
      ...(options.adopted === undefined ? {} : { adopted: options.adopted }),
      onConnected: async (bus) => {
        this.#reconciler.enqueue(HostKey.presence);
        this.#output.sendHeld();
        void this.#conditions.flush();
        await this.#reporter.restore();
        this.#sessions.begin(bus);
        // A module that waited for the bus is fetched now it is there.
        if (this.#applier.waitsForBus) this.#reconciler.enqueue(HostKey.composition);
      },
      onReconnected: (bus) => {
        this.#reconciler.enqueue(HostKey.presence);
        this.#reporter.forget(); // say it all again: what was written while away may be lost
        void this.#conditions.flush(true);
        this.#sessions.begin(bus);
      },
      ...(typeof options.credential === "string" ? { credentialFile: options.credential } : {}),
      onRefused: () => this.#own.renewWhenRefused(signal),
      signal,
      log,
    });
  }

  /**
   * The host's reconciler: its sources are the composition and config keys it reads on the bus,
   * each change told to `#changed` (which keeps it) and asking for a pass over the composition.
   */
  #reconcilerOf({ options, node, store, log }: Loaded): Reconciler<WatchSources, HostKey> {
    const retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    return reconciler<WatchSources, HostKey>({
      name: "reconciler",
      sources: watchSources({ node, store, sessions: this.#sessions, log }),
      onChange: (change) => this.#changed(change),
      keysOf: () => [HostKey.composition],
      allKeys: () => [HostKey.composition, HostKey.have],
      reconcile: (key) => this.#reconcile(key),
      retry: { initialMs: Math.min(1_000, retryMs), maxMs: retryMs },
      // One worker per key: a report or a heartbeat never waits for an apply (a runtime's
      // handover takes up to half a minute).
      workers: Object.keys(HostKey).length,
      log,
    });
  }

  /**
   * Makes the host's root, reads its node key, applied state and credential, and builds its
   * parts; run() then starts it. Rejects when any of that cannot be done.
   */
  static async create(options: HostOptions): Promise<Host> {
    const node = nodeKey(options.node);
    const root = resolve(options.root);
    const log = options.log ?? ((line) => process.stderr.write(`mesh host ${node}: ${line}\n`));
    // 0755: processes that run as other users reach their bundles through it. What is private
    // (state, cache, the node key) is 0700/0600 inside.
    await mkdir(root, { recursive: true, mode: 0o755 });
    // The runtime writes its status file here (it may run as the operator account: 0755).
    await mkdir(join(root, "run"), { recursive: true, mode: 0o755 });
    const keys = await loadOrCreateNodeKeys(`${root}/node.key`);
    const store = await AppliedStore.load(root, log);
    const credential =
      typeof options.credential === "string"
        ? await readCredential(options.credential)
        : options.credential;
    return new Host({ options, node, root, log, keys, store, credential });
  }

  get state(): Lifecycle {
    return this.#life.state;
  }

  /** The processes running now, by resource id. */
  processes(): Map<string, ProcessIdentity> {
    const out = new Map<string, ProcessIdentity>();
    const supervisor = this.#supervisor;
    for (const id of supervisor.ids()) {
      const identity = supervisor.identity(id);
      if (identity !== undefined) out.set(id, identity);
    }
    return out;
  }

  /** Resolves once every apply asked for so far is done (or the host stopped). */
  async settled(): Promise<void> {
    while (this.#appliedUpTo < this.#asked && this.#reconcilerRuns)
      await new Promise<void>((resolve) => this.#passEnded.push(resolve));
  }

  /** Resolves once the host runs: it adopted what it found and applied what it kept. */
  started(): Promise<void> {
    return this.#running;
  }

  /**
   * Resolves once the host is on the bus and heard (a heartbeat written) and every apply asked for
   * so far is done: what a new host build says `healthy` on (decision 0200).
   */
  async healthy(): Promise<void> {
    await this.#beaten;
    await this.settled();
  }

  /** Where the runtime with `pid` writes each module's load result (its status file). */
  runtimeStatusFile(pid: number): string {
    return runtimeStatusPath(this.root, pid);
  }

  /** Runs until the signal aborts (or stop()); resolves when stopped. */
  run(options: RunOptions): Promise<void> {
    const signal = AbortSignal.any([options.signal, this.#stop.signal]);
    return this.#life.run({ signal }, async (signal) => {
      if (signal.aborted) return;
      try {
        await this.#start();
      } catch (error) {
        await this.#shutdown();
        throw error;
      }
      this.#life.set(Lifecycle.running);
      this.#ran();
      await aborted(signal);
      this.#stop.abort(); // the parts hold the host's own signal: each ends with the run
      await this.#shutdown();
    });
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

  /** Adopts what an earlier host left, applies the last composition it had, then connects. */
  async #start(): Promise<void> {
    const provisioner = this.#provisioner;
    // Never two hosts on one node: the one before (letting go) is waited for.
    this.#lock = await HostLock.take(this.root, { signal: this.#stop.signal, log: this.#log });
    await this.#applier.recover();
    for (const [key, value] of Object.entries(this.#store.config))
      provisioner.setConfig(key, value as Json);
    provisioner.setModules(this.#store.composed?.modules);
    this.#asked += 1; // the first pass: what the host kept
    // A task of the host's run: one that failed would fail the host (its sources are optional:
    // it does not).
    this.#life.task("reconciler", (signal) => {
      this.#reconcilerRuns = true;
      this.#reconciling = this.#reconciler.run({ signal }).finally(() => {
        this.#reconcilerRuns = false;
        this.#wakeSettled();
      });
      return this.#reconciling;
    });
    await this.settled();
    this.#connecting = this.#connection.connect(this.#credential);
  }

  /** One key's pass (see the class's comment); what it answers is when to be asked again. */
  async #reconcile(key: HostKey): Promise<Reconciled | void> {
    switch (key) {
      case HostKey.composition:
        return this.#applyPass();
      case HostKey.have:
        return this.#every(this.#options.pollMs ?? DEFAULT_POLL_MS, () => this.#reporter.report());
      case HostKey.presence:
        // Nothing before the bus side opens: the connection asks for it then.
        if (this.#connection.bus === undefined) return;
        return this.#every(this.#options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, async () => {
          await this.#connection.beat();
          this.#beat();
        });
    }
  }

  /** Does `work`, and answers to be asked again `ms` after it began. */
  async #every(ms: number, work: () => Promise<void>): Promise<Reconciled> {
    const began = Date.now();
    await work();
    return { requeueAfterMs: Math.max(0, ms - (Date.now() - began)) };
  }

  /**
   * Applies the composition the host holds and reports. Asked again after `retryMs` while a module
   * failed, and every 2 s while one waits for a bus that is there but did not answer (a reload);
   * a pass that threw is retried after the key's backoff.
   */
  async #applyPass(): Promise<Reconciled | void> {
    const upTo = this.#asked;
    const applier = this.#applier;
    let failure: Error | undefined;
    try {
      const composed = this.#held.applied(this.#store.composed);
      if (composed !== undefined) await applier.apply(composed);
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
      this.#log(`apply failed: ${failure.stack ?? failure.message}`);
    }
    this.#conditions.runsItsBuild({
      named: this.#applier.desired?.host?.digest,
      running: this.#options.launcher?.build,
      failing: this.#applier.applyErrors.has(HOST_MODULE),
    });
    await this.#reporter.report();
    this.#appliedUpTo = Math.max(this.#appliedUpTo, upTo);
    this.#wakeSettled();
    if (failure !== undefined) throw failure;
    const again: number[] = [];
    if (applier.applyErrors.size > 0) again.push(this.#options.retryMs ?? DEFAULT_RETRY_MS);
    // A module waiting for the bus is tried again soon once the bus is there: that wait is the
    // bus's, never the build's. Before it is there, its connection asks for a pass.
    if (applier.waitsForBus && this.#connection.artifacts !== undefined) again.push(BUS_RETRY_MS);
    // A handover waits for the runtime's own to drain: looked at again soon.
    for (const w of applier.waiting.values())
      if (w.code === ErrorCode.HOST_HANDOVER) again.push(BUS_RETRY_MS);
    if (again.length > 0) return { requeueAfterMs: Math.min(...again) };
  }

  #wakeSettled(): void {
    for (const wake of this.#passEnded.splice(0)) wake();
  }

  /** A change of a source: kept (composition, config), and one more apply asked for. */
  #changed(change: SourceChange<WatchSources>): void {
    this.#asked += 1;
    if (change.source === "composed") {
      const composed = this.#held.heard(composedOf(this.node, change.after));
      if (composed !== undefined) this.#setComposed(composed);
      return;
    }
    this.#provisioner.setConfig(change.key, change.after);
    this.#store.setConfig(change.key, change.after);
  }

  #setComposed(composed: Composed): void {
    if (composed.node !== this.node) {
      this.#log(`ignored a composition for ${composed.node}: this is ${this.node}`);
      return;
    }
    this.#store.setComposed(composed);
    void this.#own.take(composed, this.#connection.bus).catch((error: unknown) => {
      this.#log(`could not keep the renewed host credential: ${(error as Error).message}`);
    });
    this.#provisioner.setModules(composed.modules);
  }

  async #shutdown(): Promise<void> {
    const supervisor = this.#supervisor;
    const store = this.#store;
    await this.#connecting.catch(() => undefined);
    // Its queue ends with the run's signal, the pass in progress finishes, its watches end.
    await this.#reconciling?.catch(() => undefined);
    // A host that lets go leaves no runtime draining for the next one to end as a stranger.
    if (this.#leaving) await supervisor.drained();
    if (this.#options.stopProcessesOnStop === true && !this.#leaving) {
      await supervisor.stopAll();
      store.forgetAllProcesses();
    } else await supervisor[Symbol.asyncDispose]();
    await store.saved();
    await this.#connection.close();
    await this.#lock?.release();
  }
}
