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
 *
 * The parts: `apply.ts` (the executor and the applied-state store), `report.ts` (mesh-have),
 * `connection.ts` (the bus side) and `watches.ts` (composition and config); this file only
 * orchestrates them. `Host.create()` does the async set-up, so every part exists from the start.
 */
import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { loadOrCreateNodeKeys, publish, readCredential, type NodeKeys } from "@mesh/bus";
import { DaemonLife, Lifecycle, aborted, type Daemon, type RunOptions } from "@mesh/kit";
import {
  RUNTIME_PROCESS_ID,
  logsSubject,
  nodeKey,
  provisionChangedSubject,
  provisionModuleChangedSubject,
  type Composed,
  type Credential,
  type ProvisionAnswer,
} from "@mesh/protocol";
import { AppliedStore } from "./applied-state.js";
import { Applier } from "./apply.js";
import { Connection, DEFAULT_HEARTBEAT_MS } from "./connection.js";
import { OwnCredential } from "./own-credential.js";
import { DEFAULT_HEALTH_RULES, type HealthRules } from "./health.js";
import { DEFAULT_TAIL_LIMITS, type TailLimits } from "./log-lines.js";
import { LogOutbox } from "./log-outbox.js";
import type { ArchiveLimits } from "./archives.js";
import type { ProcessIdentity } from "./proc.js";
import { Provisioner } from "./provisioner.js";
import { Reporter } from "./report.js";
import { pruneRuntimeStatus, runtimeStatusPath } from "./runtime-handover.js";
import type { BackoffPolicy } from "@mesh/kit";
import { DEFAULT_BACKOFF, Supervisor } from "./supervisor.js";
import { Watches } from "./watches.js";

export { HOST_PROCESS_MARKER } from "./kinds/process.js";
export { DEFAULT_HEARTBEAT_MS, HOST_VERSION } from "./connection.js";

type Json = ProvisionAnswer["value"];

/** How often a module waiting for the bus is applied again while the bus is there. */
const BUS_RETRY_MS = 2_000;

export interface HostOptions {
  readonly node: string;
  /** Where the host keeps everything: state, cache, bundles, logs, the node key. */
  readonly root: string;
  /** The host's bus credential, or the path of its file. */
  readonly credential: Credential | string;
  readonly health?: Partial<HealthRules>;
  readonly backoff?: BackoffPolicy;
  /** Between attempts to open the bus side (a bus without JetStream for a while); 0.5 s doubling to 10 s by default. */
  readonly busBackoff?: BackoffPolicy;
  /** Between TERM and KILL when a process is stopped. */
  readonly graceMs?: number;
  /**
   * A runtime being replaced: how long the new one has to load what the old one served before
   * the old one is stopped anyway, and how long the old one may drain (finish the calls it has)
   * between TERM and KILL. Defaults: 30 s, and the longest call deadline (300 s) and 10 s.
   */
  readonly runtimeHandover?: { readonly readyMs?: number; readonly drainMs?: number };
  /**
   * This node's idle time for its runtime's modules (ms; 0: never idle): a module not called for
   * this long has its worker stopped until its next call. The runtime's default (10 min) when
   * omitted.
   */
  readonly runtimeIdleMs?: number;
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
  readonly #watches: Watches;
  readonly #own: OwnCredential;
  readonly #stop = new AbortController();
  #queue: Promise<void> = Promise.resolve();
  #pending = false;
  /** The connection being made: a stop waits for it before it closes the bus. */
  #connecting: Promise<void> = Promise.resolve();
  readonly #timers: NodeJS.Timeout[] = [];
  /** Output lines read while there was no bus, sent once it is there. */
  readonly #outbox = new LogOutbox();

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
    this.#supervisor = this.#supervisorOf(options);
    this.#applier = this.#applierOf(loaded);
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
    this.#watches = new Watches({
      node,
      store,
      provisioner: this.#provisioner,
      onComposed: (composed) => this.#setComposed(composed),
      onConfig: () => this.#reconcile(),
      signal,
      log,
    });
    this.#own = new OwnCredential({
      node,
      privateKey: loaded.keys.privateKey,
      ...(typeof options.credential === "string" ? { path: options.credential } : {}),
      log,
    });
    this.#connection = this.#connectionOf(loaded);
  }

  /** What applies the composition on this machine: files, archives, processes, provisions. */
  #applierOf({ options, node, root, log, keys, store }: Loaded): Applier {
    const signal = this.#stop.signal;
    return new Applier({
      root,
      node,
      marker: createHash("sha256").update(root).digest("hex").slice(0, 16),
      keys,
      store,
      supervisor: this.#supervisor,
      provisioner: this.#provisioner,
      graceMs: options.graceMs ?? 10_000,
      ...(options.archiveLimits === undefined ? {} : { archiveLimits: options.archiveLimits }),
      ...(options.runtimeHandover === undefined
        ? {}
        : { runtimeHandover: options.runtimeHandover }),
      ...(options.runtimeIdleMs === undefined ? {} : { runtimeIdleMs: options.runtimeIdleMs }),
      artifacts: () => this.#connection.artifacts,
      bus: () => this.#connection.bus,
      signal,
      log,
    });
  }

  /** The bus side: connecting, presence, reconnecting; the watches start on each connection. */
  #connectionOf({ options, node, root, log, keys }: Loaded): Connection {
    const signal = this.#stop.signal;
    return new Connection({
      node,
      root,
      keys,
      provisioner: this.#provisioner,
      heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      ...(options.busBackoff === undefined ? {} : { openBackoff: options.busBackoff }),
      ...(options.account === undefined ? {} : { account: options.account }),
      ...(options.adopted === undefined ? {} : { adopted: options.adopted }),
      onConnected: async (bus) => {
        this.#sendHeldLines();
        await this.#reporter.restore();
        this.#watches.start(bus);
      },
      onReconnected: (bus) => {
        this.#reporter.forget(); // say it all again: what was written while away may be lost
        this.#watches.start(bus);
      },
      ...(typeof options.credential === "string" ? { credentialFile: options.credential } : {}),
      onRefused: () => this.#own.renewWhenRefused(signal),
      signal,
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

  #supervisorOf(options: HostOptions): Supervisor {
    const rules = { ...DEFAULT_HEALTH_RULES, ...options.health };
    const supervisor: Supervisor = new Supervisor({
      root: this.root,
      backoff: options.backoff ?? DEFAULT_BACKOFF,
      healthyMs: rules.healthyMs,
      graceMs: options.graceMs ?? 10_000,
      tail: options.tail ?? DEFAULT_TAIL_LIMITS,
      pollMs: options.pollMs ?? 250,
      onSpawned: (id, identity) => {
        // What a crashed runtime wrote says nothing now.
        if (id === RUNTIME_PROCESS_ID) void pruneRuntimeStatus(this.root, supervisor);
        this.#store.spawned(id, identity);
      },
      onExit: (id, exit) => this.#log(`${exit.reason}; restarting in ${exit.delayMs} ms`),
      onLine: (module, processName, stream, line) => {
        const said = { process: processName, stream, line, at: new Date().toISOString() };
        const bus = this.#connection.bus;
        if (bus === undefined) {
          this.#outbox.hold(module, said);
          return;
        }
        this.#sendHeldLines();
        publish(bus, logsSubject(this.node, module), said);
      },
    });
    return supervisor;
  }

  /** Sends the output lines read while there was no bus, oldest first (see log-outbox.ts). */
  #sendHeldLines(): void {
    const bus = this.#connection.bus;
    if (bus === undefined || this.#outbox.size === 0) return;
    const dropped = this.#outbox.drain((module, said) =>
      publish(bus, logsSubject(this.node, module), said),
    );
    if (dropped > 0) {
      this.#log(
        `the oldest ${dropped} output line(s) read while the bus was away were not sent to mesh logs: they are in the log files under ${join(this.root, "logs")}`,
      );
    }
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

  /** Resolves once every apply asked for so far is done. */
  async settled(): Promise<void> {
    let seen: Promise<void> | undefined;
    while (seen !== this.#queue) {
      seen = this.#queue;
      await seen;
    }
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
      await aborted(signal);
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
    const applier = this.#applier;
    const store = this.#store;
    const provisioner = this.#provisioner;
    const reporter = this.#reporter;
    const options = this.#options;
    await applier.recover();
    for (const [key, value] of Object.entries(store.config))
      provisioner.setConfig(key, value as Json);
    provisioner.setModules(store.composed?.modules);
    this.#reconcile();
    await this.settled();
    const tick = setInterval(() => void reporter.report(), options.pollMs ?? 250);
    const retry = setInterval(() => {
      if (applier.applyErrors.size > 0) this.#reconcile();
    }, options.retryMs ?? 30_000);
    // A module waiting for the bus (a fetch it did not answer) is tried again soon once the bus
    // is there: that wait is the bus's, never the build's.
    const busRetry = setInterval(() => {
      if (applier.waitsForBus && this.#connection.artifacts !== undefined) this.#reconcile();
    }, BUS_RETRY_MS);
    this.#timers.push(tick, retry, busRetry);
    this.#connecting = this.#connection.connect(this.#credential);
  }

  /** Asks for an apply; several asks while one runs make one more. */
  #reconcile(): void {
    if (this.#pending) return;
    this.#pending = true;
    this.#queue = this.#queue.then(async () => {
      this.#pending = false;
      const composed = this.#store.composed;
      if (this.#stop.signal.aborted) return;
      try {
        if (composed !== undefined) await this.#applier.apply(composed);
      } catch (error) {
        this.#log(`apply failed: ${(error as Error).stack ?? String(error)}`);
      }
      await this.#reporter.report();
    });
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
    this.#reconcile();
  }

  async #shutdown(): Promise<void> {
    const supervisor = this.#supervisor;
    const store = this.#store;
    for (const timer of this.#timers) clearInterval(timer);
    await this.#connecting.catch(() => undefined);
    await this.#watches.stop();
    await this.#queue.catch(() => undefined);
    if (this.#options.stopProcessesOnStop === true) {
      await supervisor.stopAll();
      store.forgetAllProcesses();
    } else await supervisor[Symbol.asyncDispose]();
    await store.saved();
    await this.#connection.close();
  }
}
