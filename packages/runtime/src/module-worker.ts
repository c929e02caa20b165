/**
 * One module in a worker of its own: started from the SDK's worker bootstrap with the module's
 * entries, watched with a heartbeat, restarted with backoff when it fails to load, crashes or
 * hangs, and served as one NATS service while it is loaded.
 *
 * Everything a worker asks is answered as the module this supervisor was made for: the name is
 * bound here, from `MESH_TOOL_MODULES`, and nothing in a worker's messages can change it.
 */
import { Worker } from "node:worker_threads";
import { flush, type MeshBus, type Served } from "@mesh/bus";
import { Backoff, delay, within } from "@mesh/kit";
import { ErrorCode, MeshError, ReplyCode, toReplyCode } from "@mesh/protocol";
import {
  PROTOCOL_VERSION,
  type FromWorker,
  type ToolInfo,
  type WorkerStart,
} from "@mesh/sdk/internal";
import { ModuleAsks, post, serveModule } from "./module-asks.js";
import { WorkerCalls, firstLine, wakeAll, type PendingCall } from "./worker-calls.js";
import type { Provisioner } from "./provisioner.js";
import { serviceVersion } from "./service-version.js";
import type { SpareWorker } from "./spare-worker.js";
import type { ToolStatsCounter } from "./tool-stats.js";
import { ModuleState, deadlineOf, type ModuleStatus, type WorkerTuning } from "./worker-tuning.js";

export { ModuleState, DEFAULT_TUNING } from "./worker-tuning.js";
export type { ModuleStatus, WorkerTuning } from "./worker-tuning.js";

export interface ModuleWorkerOptions {
  readonly module: string;
  readonly node: string;
  readonly entries: readonly string[];
  readonly bus: MeshBus;
  readonly provisioner: Provisioner;
  readonly tuning: WorkerTuning;
  /** This module's idle time, when it sets its own (its manifest's, or the node's). */
  readonly idleMs?: number;
  /** A worker booted ahead, taken when there is one (spare-worker.ts). */
  readonly spare?: SpareWorker;
  /** The bootstrap file (the SDK's `@mesh/sdk/worker`). */
  readonly workerFile: URL;
  /** The environment module code sees: the runtime's, without its credential's path. */
  readonly env: Record<string, string>;
  readonly version: string;
  readonly onStatus: (status: ModuleStatus) => void;
  /** A request rejected before any handler (a JetStream delivery, a forged subject). */
  readonly onRejected: (why: string, subject: string) => void;
  readonly log: (text: string) => void;
  /** Counts the module's calls and errors; nothing is counted without one (decision 0172). */
  readonly stats?: ToolStatsCounter;
}

/** A worker the runtime ends on purpose, and whether a restart follows. */
interface Ending {
  readonly why: string;
  /** Idle: no restart until the next call, and not a failure. */
  readonly idle?: boolean;
}

export class ModuleWorker implements AsyncDisposable {
  readonly module: string;
  readonly #o: ModuleWorkerOptions;
  readonly #asks: ModuleAsks;
  #worker: Worker | undefined;
  #served: Served | undefined;
  /** The tools the service was registered with (kept while idle). */
  #servedTools = "";
  #status: ModuleStatus;
  #stopping = false;
  /** Each wait of the worker's, aborted to call it off: a restart, the heartbeat, the idle check. */
  #restartWait: AbortController | undefined;
  #heartbeat: AbortController | undefined;
  #idleWait: AbortController | undefined;
  readonly #backoff: Backoff;
  #lastCall = 0;
  #lastPong = 0;
  #startedAt = 0;
  #last: { loadMs: number; serveMs: number } | undefined;
  readonly #calls: WorkerCalls;
  /** Calls waiting for the module to come out of idle. */
  readonly #loading = new Set<() => void>();
  /** Why the current worker is being ended, when the runtime ends it. */
  #ending: Ending | undefined;

  constructor(options: ModuleWorkerOptions) {
    this.module = options.module;
    this.#o = options;
    this.#backoff = new Backoff({
      initialMs: options.tuning.initialBackoffMs,
      maxMs: options.tuning.maxBackoffMs,
      healthyMs: options.tuning.healthyAfterMs,
    });
    this.#asks = new ModuleAsks({
      module: options.module,
      node: options.node,
      bus: options.bus,
      provisioner: options.provisioner,
      log: options.log,
      current: (worker) => worker === this.#worker,
    });
    this.#calls = new WorkerCalls({
      module: options.module,
      node: options.node,
      maxTimeoutMs: options.tuning.maxTimeoutMs,
      onEnded: () => (this.#lastCall = Date.now()),
    });
    this.#status = {
      module: options.module,
      state: ModuleState.starting,
      tools: [],
      restarts: 0,
      since: new Date().toISOString(),
    };
  }

  get status(): ModuleStatus {
    return this.#status;
  }

  /** The worker's thread id while it runs (tests end it to prove the others keep serving). */
  get threadId(): number | undefined {
    return this.#worker?.threadId;
  }

  /** How many calls are in the worker now. */
  get inFlight(): number {
    return this.#calls.size;
  }

  get #idleMs(): number {
    return this.#o.idleMs ?? this.#o.tuning.idleMs;
  }

  /** Ends the current worker as a crash would; it is restarted after its backoff. */
  async terminate(): Promise<void> {
    await this.#worker?.terminate();
  }

  start(): void {
    if (this.#stopping) return;
    const { externalLimitMb, memoryProbeMs } = this.#o.tuning;
    const start: WorkerStart = {
      v: PROTOCOL_VERSION,
      module: this.module,
      node: this.#o.node,
      entries: this.#o.entries,
      ...(externalLimitMb > 0
        ? { external: { limitBytes: externalLimitMb * MIB, probeMs: memoryProbeMs } }
        : {}),
    };
    this.#ending = undefined;
    this.#startedAt = performance.now();
    this.#setStatus({ state: ModuleState.starting, tools: this.#status.tools });
    const spare = this.#o.spare?.take();
    const worker =
      spare ??
      new Worker(this.#o.workerFile, {
        workerData: start,
        resourceLimits: this.#o.tuning.resourceLimits,
        env: this.#o.env,
        name: `mesh-module-${this.module}`,
      });
    if (spare !== undefined) post(spare, { v: 1, t: "start", start });
    this.#worker = worker;
    // Messages are read off this worker object: the module is the one it was started for.
    worker.on("message", (message: FromWorker) => this.#onMessage(worker, message));
    worker.on("error", (error) => {
      this.#ending ??= { why: `its code threw and did not catch: ${error.stack ?? error.message}` };
    });
    worker.on("exit", (code) => this.#onExit(worker, code));
    this.#startHeartbeat(worker);
  }

  /**
   * Runs a call in the worker; throws a MeshError with a reply code. An idle module is started
   * first, and the call waits for it within its deadline.
   */
  call(tool: string, input: unknown, timeoutMs: number): Promise<unknown> {
    this.#lastCall = Date.now();
    const worker = this.#worker;
    // The common case first, without an await in the way.
    if (worker !== undefined && this.#status.state === ModuleState.serving) {
      return this.#calls.run(worker, tool, input, timeoutMs);
    }
    return this.#callWhenLoaded(tool, input, timeoutMs);
  }

  async #callWhenLoaded(tool: string, input: unknown, timeoutMs: number): Promise<unknown> {
    if (this.#status.state === ModuleState.idle) {
      this.start();
    }
    if (this.#status.state === ModuleState.starting) {
      // Waking from idle (its service registered all along), or loaded with its service just
      // registered and its status not yet said: the call waits for it.
      await this.#waitLoaded(timeoutMs);
    }
    const worker = this.#worker;
    if (worker === undefined || this.#status.state !== ModuleState.serving) {
      throw new MeshError(
        ErrorCode.NOT_FOUND,
        `${this.module} is not loaded on ${this.#o.node} now (${this.#status.state}${this.#status.error === undefined ? "" : `: ${firstLine(this.#status.error)}`}); retry once it serves again (\`mesh tools --module ${this.module}\`)`,
        { module: this.module, node: this.#o.node },
      );
    }
    return this.#calls.run(worker, tool, input, timeoutMs);
  }

  /** Resolves once the module leaves `starting` (or the time is up). */
  async #waitLoaded(timeoutMs: number): Promise<void> {
    let done: () => void = () => undefined;
    const loaded = new Promise<void>((resolve) => (done = resolve));
    this.#loading.add(done);
    await within(loaded, timeoutMs, undefined);
    this.#loading.delete(done);
  }

  /**
   * Stops taking calls (the service's subscriptions are drained: what the server already sent
   * is still answered), lets the calls in flight finish within their deadlines, then stops.
   */
  async drain(): Promise<void> {
    if (this.#stopping) return;
    this.#idleWait?.abort();
    await this.#stopServing();
    await this.#calls.drained(() => this.#stopping);
    await this.stop();
  }

  /** Stops the worker and its service for good. Stopping twice is harmless. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#restartWait?.abort();
    this.#idleWait?.abort();
    this.#heartbeat?.abort();
    await this.#stopServing();
    const worker = this.#worker;
    if (worker !== undefined) {
      post(worker, { v: 1, t: "stop" });
      await worker.terminate();
    }
    this.#endWorker("the runtime is stopping");
    this.#setStatus({ state: ModuleState.stopped, tools: this.#status.tools });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  // -------------------------------------------------------------------------------------------

  #onMessage(worker: Worker, message: FromWorker): void {
    if (worker !== this.#worker || typeof message !== "object" || message === null) return;
    if (message.v !== PROTOCOL_VERSION) {
      // The bootstrap always speaks this runtime's version (it is this runtime's SDK); anything
      // else on the port was posted by module code itself and is not read.
      this.#o.log(
        `[node-tools] ${this.module}: ignored a message that is not protocol ${String(PROTOCOL_VERSION)}`,
      );
      return;
    }
    switch (message.t) {
      case "loaded":
        void this.#loaded(worker, message.tools);
        return;
      case "load-failed":
        this.#fail(worker, `it failed to load: ${message.error}`);
        return;
      case "result":
        this.#calls.settle(message.id, (call) => call.resolve(message.value));
        return;
      case "failed":
        this.#calls.settle(message.id, (call) => this.#failed(call, message));
        return;
      case "ask":
        void this.#asks.answer(worker, message.id, message.op, message.params);
        return;
      case "log":
        this.#asks.log(message.level, message.text);
        return;
      case "pong":
        this.#lastPong = Date.now();
        return;
      case "over-memory":
        this.#fail(
          worker,
          `it held ${mib(message.memory.external)} MiB outside its heap (Buffers, ArrayBuffers), over its limit of ${this.#o.tuning.externalLimitMb} MiB; its worker was stopped`,
        );
        return;
      case "self-signal":
        // The bootstrap ends the worker right after saying so; this is why.
        this.#ending = {
          why: `its code sent ${message.signal} to pid ${message.pid} (the runtime's own process, its group or its host); only its worker was ended`,
        };
        return;
      default:
        return;
    }
  }

  #failed(call: PendingCall, message: Extract<FromWorker, { t: "failed" }>): void {
    if (message.code === ReplyCode.INTERNAL) {
      this.#o.log(
        `[node-tools] ${this.module}: a call failed: ${message.detail ?? message.message}`,
      );
    }
    call.reject(new MeshError(toReplyCode(message.code), message.message, { module: this.module }));
  }

  #startHeartbeat(worker: Worker): void {
    this.#heartbeat?.abort();
    const beating = new AbortController();
    this.#heartbeat = beating;
    this.#lastPong = Date.now();
    void this.#beat(worker, beating.signal);
  }

  /** Pings the worker every `heartbeatMs` until `signal` aborts; one silent past `hangMs` hung. */
  async #beat(worker: Worker, signal: AbortSignal): Promise<void> {
    let seq = 0;
    while (await delay(this.#o.tuning.heartbeatMs, { signal })) {
      if (worker !== this.#worker) continue;
      const silentFor = Date.now() - this.#lastPong;
      if (silentFor > this.#o.tuning.hangMs) {
        this.#fail(
          worker,
          `it hung: its worker did not answer a heartbeat for ${silentFor} ms (a handler or its load blocks the event loop); it was terminated`,
        );
        continue;
      }
      post(worker, { v: 1, t: "ping", seq: ++seq });
    }
  }

  async #loaded(worker: Worker, tools: readonly ToolInfo[]): Promise<void> {
    const loadedAt = performance.now();
    const toolsKey = JSON.stringify(tools);
    try {
      // Woken from idle with the same tools: the service registered all along stays.
      if (this.#served === undefined || this.#servedTools !== toolsKey) {
        // The module's build, asked before the old service stops so it is not unserved meanwhile.
        const version = await serviceVersion(this.#o.provisioner, this.module, this.#o.version);
        await this.#stopServing();
        if (tools.length > 0) {
          this.#served = await serveModule(
            { ...this.#o, version, ...this.#counted() },
            tools,
            (tool, input, headers) => this.call(tool, input, deadlineOf(headers, this.#o.tuning)),
          );
        }
        this.#servedTools = toolsKey;
        // Serving means answering: the server has the endpoints' subscriptions before it is said.
        await flush(this.#o.bus);
      }
    } catch (error) {
      this.#fail(worker, `its tools could not be served on the bus: ${String(error)}`);
      return;
    }
    if (worker !== this.#worker) {
      if (this.#worker === undefined) await this.#stopServing();
      return;
    }
    this.#backoff.started();
    this.#last = {
      loadMs: round(loadedAt - this.#startedAt),
      serveMs: round(performance.now() - loadedAt),
    };
    this.#lastCall = Math.max(this.#lastCall, Date.now());
    this.#setStatus({ state: ModuleState.serving, tools: tools.map((t) => t.name) });
    this.#o.spare?.prepare();
    this.#scheduleIdle();
  }

  #counted(): { counted?: (tool: string, code: ReplyCode | undefined) => void } {
    const stats = this.#o.stats;
    return stats === undefined
      ? {}
      : { counted: (tool, code) => stats.count(this.module, tool, code) };
  }

  /** Stops the worker once no call came for the idle time; its service stays registered. */
  #scheduleIdle(): void {
    this.#idleWait?.abort();
    const idleMs = this.#idleMs;
    if (idleMs <= 0 || this.#stopping) return;
    const left = this.#lastCall + idleMs - Date.now();
    const wait = new AbortController();
    this.#idleWait = wait;
    // Not holding the process open: an idle check is no reason to stay.
    void delay(Math.max(left, 10), { signal: wait.signal, ref: false }).then((due) => {
      if (due) this.#idleNow(idleMs);
    });
  }

  #idleNow(idleMs: number): void {
    const worker = this.#worker;
    if (this.#status.state !== ModuleState.serving || worker === undefined) return;
    if (this.#calls.size > 0 || Date.now() - this.#lastCall < idleMs) {
      this.#scheduleIdle();
      return;
    }
    this.#ending = { why: `not called for ${idleMs} ms`, idle: true };
    post(worker, { v: 1, t: "stop" });
    void worker.terminate();
  }

  /** Ends a worker the runtime gave up on (a failed load, a hang, memory); its exit restarts it. */
  #fail(worker: Worker, why: string): void {
    if (worker !== this.#worker) return;
    this.#ending = { why };
    void worker.terminate();
  }

  #onExit(worker: Worker, code: number): void {
    if (worker !== this.#worker) return;
    this.#heartbeat?.abort();
    this.#idleWait?.abort();
    const ending = this.#ending ?? {
      why: `its worker exited with code ${code} (process.exit in its code, or out of memory)`,
    };
    this.#worker = undefined;
    this.#endWorker(ending.why);
    if (this.#stopping) return;
    if (ending.idle === true) {
      this.#backoff.ended();
      this.#setStatus({ state: ModuleState.idle, tools: this.#status.tools });
      return;
    }
    void this.#stopServing();
    this.#restartLater(ending.why);
  }

  #restartLater(why: string): void {
    const ms = this.#backoff.next();
    this.#o.log(
      `[node-tools] ${this.module} is failing: ${firstLine(why)}; starting it again in ${ms} ms`,
    );
    this.#setStatus({ state: ModuleState.failing, tools: this.#status.tools, error: why });
    const wait = new AbortController();
    this.#restartWait = wait;
    void delay(ms, { signal: wait.signal }).then((due) => {
      if (!due) return;
      this.#status = { ...this.#status, restarts: this.#status.restarts + 1 };
      this.start();
    });
  }

  /** What a worker held ends with it: its calls fail, its watches stop. */
  #endWorker(why: string): void {
    this.#calls.failAll(why, this.#o.log);
    this.#asks.stopWatches();
  }

  async #stopServing(): Promise<void> {
    const served = this.#served;
    this.#served = undefined;
    this.#servedTools = "";
    await served?.stop();
  }

  #setStatus(next: Pick<ModuleStatus, "state" | "tools"> & { error?: string }): void {
    this.#status = {
      module: this.module,
      state: next.state,
      tools: next.tools,
      ...(next.error === undefined ? {} : { error: next.error }),
      restarts: this.#status.restarts,
      since: new Date().toISOString(),
      ...(this.#last === undefined ? {} : { last: this.#last }),
    };
    if (next.state !== ModuleState.starting) wakeAll(this.#loading);
    this.#o.onStatus(this.#status);
  }
}

const MIB = 1024 * 1024;

const round = (ms: number): number => Math.round(ms * 10) / 10;

function mib(bytes: number): string {
  return (bytes / MIB).toFixed(1);
}
