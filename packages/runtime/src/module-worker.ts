/**
 * One module in a worker of its own: started from the SDK's worker bootstrap with the module's
 * entries, watched with a heartbeat, restarted with backoff when it fails to load, crashes or
 * hangs, and served as one NATS service while it is loaded.
 *
 * Everything a worker asks is answered as the module this supervisor was made for: the name is
 * bound here, from `MESH_TOOL_MODULES`, and nothing in a worker's messages can change it.
 */
import { Worker, type ResourceLimits } from "node:worker_threads";
import { z } from "zod";
import { KvBucket, flush, serve, sayCondition, type MeshBus, type Served } from "@mesh/bus";
import {
  BoundKey,
  CallHeader,
  ConditionLevel,
  ErrorCode,
  MeshError,
  ReplyCode,
  isMeshError,
  stateBucket,
  toolSubject,
  type ReplyCode as ReplyCodeType,
} from "@mesh/protocol";
import {
  PROTOCOL_VERSION,
  type AskOp,
  type FromWorker,
  type ProvisionItem,
  type ToWorker,
  type ToolInfo,
  type WorkerStart,
} from "@mesh/sdk";
import type { Provisioner } from "./provisioner.js";

/** Where a module stands, as the host reads it from the status file. */
export const ModuleState = {
  /** The worker is importing the module's entries. */
  starting: "starting",
  /** Loaded; its tools are served. */
  serving: "serving",
  /** It failed to load, crashed or hung; `error` says how, and it is restarted after a backoff. */
  failing: "failing",
  /** The runtime stopped it. */
  stopped: "stopped",
} as const;
export type ModuleState = (typeof ModuleState)[keyof typeof ModuleState];

export interface ModuleStatus {
  readonly module: string;
  readonly state: ModuleState;
  /** The tools it serves (while serving) or served last. */
  readonly tools: readonly string[];
  /** Why it is failing: the load error, the crash, or the missed heartbeat. */
  readonly error?: string;
  /** How many times its worker was started again after a failure. */
  readonly restarts: number;
  /** When it entered this state (ISO 8601). */
  readonly since: string;
}

export interface WorkerTuning {
  /** A call's deadline without a `Mesh-Timeout-Ms` header. */
  readonly defaultTimeoutMs: number;
  /** The longest deadline a caller may ask for; more is cut to this. */
  readonly maxTimeoutMs: number;
  /** How often the worker is pinged. */
  readonly heartbeatMs: number;
  /** A worker that has not answered a ping for this long is hung and is terminated. */
  readonly hangMs: number;
  /** The first restart's delay; it doubles with each failure in a row, up to `maxBackoffMs`. */
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** A worker that served this long before failing starts its backoff over. */
  readonly healthyAfterMs: number;
  readonly resourceLimits: ResourceLimits;
}

export const DEFAULT_TUNING: WorkerTuning = {
  defaultTimeoutMs: 10_000,
  maxTimeoutMs: 300_000,
  heartbeatMs: 1_000,
  hangMs: 5_000,
  initialBackoffMs: 1_000,
  maxBackoffMs: 60_000,
  healthyAfterMs: 30_000,
  resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
};

export interface ModuleWorkerOptions {
  readonly module: string;
  readonly node: string;
  readonly entries: readonly string[];
  readonly bus: MeshBus;
  readonly provisioner: Provisioner;
  readonly tuning: WorkerTuning;
  /** The bootstrap file (the SDK's `@mesh/sdk/worker`). */
  readonly workerFile: URL;
  /** The environment module code sees: the runtime's, without its credential's path. */
  readonly env: Record<string, string>;
  readonly version: string;
  readonly onStatus: (status: ModuleStatus) => void;
  /** A request rejected before any handler (a JetStream delivery, a forged subject). */
  readonly onRejected: (why: string, subject: string) => void;
  readonly log: (text: string) => void;
}

interface PendingCall {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
}

/** Any JSON value: what a module keeps in its states. */
const Json = z.json();

export class ModuleWorker implements AsyncDisposable {
  readonly module: string;
  readonly #o: ModuleWorkerOptions;
  #worker: Worker | undefined;
  #served: Served | undefined;
  #status: ModuleStatus;
  #stopping = false;
  #restartTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #failuresInRow = 0;
  #servingSince = 0;
  #nextCall = 1;
  readonly #calls = new Map<number, PendingCall>();
  /** This worker's watches, by the id its bootstrap gave them. */
  readonly #watches = new Map<number, () => void>();
  /** Why the current worker is being ended, when the runtime ends it (a hang, a failed load). */
  #endedBecause: string | undefined;

  constructor(options: ModuleWorkerOptions) {
    this.module = options.module;
    this.#o = options;
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

  /** Ends the current worker as a crash would; it is restarted after its backoff. */
  async terminate(): Promise<void> {
    await this.#worker?.terminate();
  }

  start(): void {
    if (this.#stopping) return;
    const start: WorkerStart = {
      v: PROTOCOL_VERSION,
      module: this.module,
      node: this.#o.node,
      entries: this.#o.entries,
    };
    this.#endedBecause = undefined;
    this.#setStatus({ state: ModuleState.starting, tools: this.#status.tools });
    const worker = new Worker(this.#o.workerFile, {
      workerData: start,
      resourceLimits: this.#o.tuning.resourceLimits,
      env: this.#o.env,
      name: `mesh-module-${this.module}`,
    });
    this.#worker = worker;
    // Messages are read off this worker object: the module is the one it was started for.
    worker.on("message", (message: FromWorker) => this.#onMessage(worker, message));
    worker.on("error", (error) => {
      this.#endedBecause ??= `its code threw and did not catch: ${error.stack ?? error.message}`;
    });
    worker.on("exit", (code) => this.#onExit(worker, code));
    this.#startHeartbeat(worker);
  }

  /** Runs a call in the worker; throws a MeshError with a reply code. */
  call(tool: string, input: unknown, timeoutMs: number): Promise<unknown> {
    const worker = this.#worker;
    if (worker === undefined || this.#status.state !== ModuleState.serving) {
      return Promise.reject(
        new MeshError(
          ErrorCode.NOT_FOUND,
          `${this.module} is not loaded on ${this.#o.node} now (${this.#status.state}${this.#status.error === undefined ? "" : `: ${firstLine(this.#status.error)}`}); retry once it serves again (\`mesh tools --module ${this.module}\`)`,
          { module: this.module, node: this.#o.node },
        ),
      );
    }
    const id = this.#nextCall++;
    return new Promise((resolve, reject) => {
      // The runtime keeps the deadline itself: a worker that blocks its event loop cannot.
      const timer = setTimeout(() => {
        this.#calls.delete(id);
        post(worker, { v: 1, t: "cancel", id });
        reject(
          new MeshError(
            ErrorCode.TIMEOUT,
            `${this.module}/${tool} did not finish within ${timeoutMs} ms; its handler was told to stop (its signal aborted). ` +
              `Give a longer deadline with the ${CallHeader.timeoutMs} header (at most ${this.#o.tuning.maxTimeoutMs} ms), or make the tool faster`,
            { module: this.module, node: this.#o.node },
          ),
        );
      }, timeoutMs);
      this.#calls.set(id, { resolve, reject, timer });
      post(worker, { v: 1, t: "call", id, tool, input, timeoutMs });
    });
  }

  /** Stops the worker and its service for good. Stopping twice is harmless. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    clearTimeout(this.#restartTimer);
    clearInterval(this.#heartbeat);
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
        this.#settle(message.id, (call) => call.resolve(message.value));
        return;
      case "failed":
        this.#settle(message.id, (call) => {
          if (message.code === ReplyCode.INTERNAL) {
            this.#o.log(
              `[node-tools] ${this.module}: a call failed: ${message.detail ?? message.message}`,
            );
          }
          call.reject(
            new MeshError(toCode(message.code), message.message, { module: this.module }),
          );
        });
        return;
      case "ask":
        void this.#answer(worker, message.id, message.op, message.params);
        return;
      case "log":
        this.#o.log(`[${this.module}] ${message.level}: ${message.text}`);
        return;
      case "pong":
        this.#lastPong = Date.now();
        return;
      default:
        return;
    }
  }

  #lastPong = 0;

  #startHeartbeat(worker: Worker): void {
    clearInterval(this.#heartbeat);
    this.#lastPong = Date.now();
    let seq = 0;
    this.#heartbeat = setInterval(() => {
      if (worker !== this.#worker) return;
      const silentFor = Date.now() - this.#lastPong;
      if (silentFor > this.#o.tuning.hangMs) {
        this.#fail(
          worker,
          `it hung: its worker did not answer a heartbeat for ${silentFor} ms (a handler or its load blocks the event loop); it was terminated`,
        );
        return;
      }
      post(worker, { v: 1, t: "ping", seq: ++seq });
    }, this.#o.tuning.heartbeatMs);
  }

  async #loaded(worker: Worker, tools: readonly ToolInfo[]): Promise<void> {
    const endpoints = tools.map((tool) => ({
      name: tool.name,
      subject: toolSubject(this.#o.node, this.module, tool.name),
      metadata: {
        description: tool.description,
        input: JSON.stringify(tool.input),
        ...(tool.output === undefined ? {} : { output: JSON.stringify(tool.output) }),
      },
      handler: async (request: { json(): unknown; headers: ReadonlyMap<string, string> }) =>
        this.call(tool.name, request.json(), this.#deadlineOf(request.headers)),
    }));
    try {
      await this.#stopServing();
      if (endpoints.length > 0) {
        this.#served = await serve(this.#o.bus, {
          name: this.module,
          version: this.#o.version,
          description: `the tools of ${this.module} on ${this.#o.node}`,
          metadata: { node: this.#o.node, module: this.module },
          endpoints,
          onRejected: this.#o.onRejected,
          onInternalError: (error, subject) =>
            this.#o.log(
              `[node-tools] ${subject}: ${error instanceof Error ? error.message : String(error)}`,
            ),
        });
      }
      // Serving means answering: the server has the endpoints' subscriptions before it is said.
      await flush(this.#o.bus);
    } catch (error) {
      this.#fail(worker, `its tools could not be served on the bus: ${String(error)}`);
      return;
    }
    if (worker !== this.#worker) {
      await this.#stopServing();
      return;
    }
    this.#servingSince = Date.now();
    this.#setStatus({ state: ModuleState.serving, tools: tools.map((t) => t.name) });
  }

  #deadlineOf(headers: ReadonlyMap<string, string>): number {
    let text: string | undefined;
    for (const [key, value] of headers) {
      if (key.toLowerCase() === CallHeader.timeoutMs.toLowerCase()) text = value;
    }
    if (text === undefined) return this.#o.tuning.defaultTimeoutMs;
    const ms = Number(text);
    if (!Number.isSafeInteger(ms) || ms <= 0) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `the ${CallHeader.timeoutMs} header is ${JSON.stringify(text)}, not a whole number of milliseconds above 0; send e.g. 5000, or leave it out for ${this.#o.tuning.defaultTimeoutMs}`,
      );
    }
    return Math.min(ms, this.#o.tuning.maxTimeoutMs);
  }

  #settle(id: number, how: (call: PendingCall) => void): void {
    const call = this.#calls.get(id);
    if (call === undefined) return; // already timed out
    this.#calls.delete(id);
    clearTimeout(call.timer);
    how(call);
  }

  /** Ends a worker the runtime gave up on (a failed load, a hang); its exit restarts it. */
  #fail(worker: Worker, why: string): void {
    if (worker !== this.#worker) return;
    this.#endedBecause = why;
    void worker.terminate();
  }

  #onExit(worker: Worker, code: number): void {
    if (worker !== this.#worker) return;
    clearInterval(this.#heartbeat);
    const why =
      this.#endedBecause ??
      `its worker exited with code ${code} (process.exit in its code, or out of memory)`;
    this.#worker = undefined;
    this.#endWorker(why);
    if (this.#stopping) return;
    void this.#stopServing();
    if (
      this.#servingSince > 0 &&
      Date.now() - this.#servingSince >= this.#o.tuning.healthyAfterMs
    ) {
      this.#failuresInRow = 0;
    }
    this.#servingSince = 0;
    const delay = Math.min(
      this.#o.tuning.initialBackoffMs * 2 ** this.#failuresInRow,
      this.#o.tuning.maxBackoffMs,
    );
    this.#failuresInRow += 1;
    this.#o.log(
      `[node-tools] ${this.module} is failing: ${firstLine(why)}; starting it again in ${delay} ms`,
    );
    this.#setStatus({ state: ModuleState.failing, tools: this.#status.tools, error: why });
    this.#restartTimer = setTimeout(() => {
      this.#status = { ...this.#status, restarts: this.#status.restarts + 1 };
      this.start();
    }, delay);
  }

  /** What a worker held ends with it: its calls fail, its watches stop. */
  #endWorker(why: string): void {
    for (const [id, call] of this.#calls) {
      clearTimeout(call.timer);
      this.#calls.delete(id);
      this.#o.log(`[node-tools] ${this.module}: a call ended with its worker: ${firstLine(why)}`);
      call.reject(new MeshError(ErrorCode.INTERNAL, `the worker of ${this.module} ended: ${why}`));
    }
    for (const stop of this.#watches.values()) stop();
    this.#watches.clear();
    this.#o.provisioner.stopModule(this.module);
  }

  async #stopServing(): Promise<void> {
    const served = this.#served;
    this.#served = undefined;
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
    };
    this.#o.onStatus(this.#status);
  }

  // -------------------------------------------------------------------------------------------
  // What module code asks

  async #answer(worker: Worker, id: number, op: AskOp, params: unknown): Promise<void> {
    try {
      const value = await this.#do(worker, id, op, (params ?? {}) as Record<string, unknown>);
      if (worker === this.#worker) post(worker, { v: 1, t: "answer", id, value: value ?? null });
    } catch (error) {
      if (worker !== this.#worker) return;
      const code = isMeshError(error) ? toCode(error.code) : ReplyCode.INTERNAL;
      if (code === ReplyCode.INTERNAL) {
        this.#o.log(`[node-tools] ${this.module}: ${op} failed: ${String(error)}`);
      }
      post(worker, {
        v: 1,
        t: "refusal",
        id,
        code,
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }

  async #do(worker: Worker, id: number, op: AskOp, p: Record<string, unknown>): Promise<unknown> {
    const module = this.module;
    switch (op) {
      case "provision.get":
        return this.#o.provisioner.get(module, { kind: p["kind"], key: p["key"] });
      case "provision.watch": {
        const stop = await this.#o.provisioner.watch(
          module,
          { kind: p["kind"], key: p["key"] },
          (item: ProvisionItem) => {
            if (worker === this.#worker) post(worker, { v: 1, t: "watched", watch: id, item });
          },
        );
        if (worker !== this.#worker) stop();
        else this.#watches.set(id, stop);
        return {};
      }
      case "provision.unwatch": {
        const watch = Number(p["watch"]);
        this.#watches.get(watch)?.();
        this.#watches.delete(watch);
        return {};
      }
      case "condition": {
        const level = ConditionLevel.safeParse(p["level"]);
        if (!level.success) {
          throw new MeshError(
            ErrorCode.INVALID_INPUT,
            `a condition's level is ${JSON.stringify(p["level"])}; say info, warning or error`,
          );
        }
        await sayCondition(this.#o.bus, {
          module,
          node: this.#o.node,
          name: String(p["name"]),
          level: level.data,
          message: String(p["message"]),
        });
        return {};
      }
      case "state.get":
      case "state.put":
      case "state.delete":
      case "state.keys": {
        const { bucket, readOnly } = await this.#stateBucket(String(p["state"]));
        const kv = await KvBucket.openWith(this.#o.bus, bucket, Json);
        const key = String(p["key"]);
        if (op === "state.get") return (await kv.get(key))?.value;
        if (op === "state.keys") {
          return kv.keys(typeof p["filter"] === "string" ? p["filter"] : ">");
        }
        if (readOnly) {
          throw new MeshError(
            ErrorCode.REFUSED,
            `${module} reads the state ${JSON.stringify(p["state"])} and does not own it, so it may not write it; write only its own states`,
            { module },
          );
        }
        if (op === "state.put") await kv.put(key, Json.parse(p["value"] ?? null));
        else await kv.delete(key);
        return {};
      }
      default:
        throw new MeshError(
          ErrorCode.INVALID_INPUT,
          `the runtime answers no ${JSON.stringify(op)}; the module's SDK is newer than the runtime`,
        );
    }
  }

  /**
   * A state by the name module code gave: its own (`name`), or one it reads (`owner/name`). A
   * read is resolved through the provisioner as this module, so only a declared read (the bound
   * value `read.<owner>.<state>`) is opened: the runtime's credential holds every served module's
   * reads, and the bus alone would not stop one module reading what another declared.
   */
  async #stateBucket(name: string): Promise<{ bucket: string; readOnly: boolean }> {
    const slash = name.indexOf("/");
    const owner = slash < 0 ? this.module : name.slice(0, slash);
    const state = slash < 0 ? name : name.slice(slash + 1);
    let bucket: string;
    try {
      bucket = stateBucket(owner, state);
    } catch (error) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `${JSON.stringify(name)} names no state: give a state of ${this.module}'s own, or <module>/<state> for one it reads`,
        { cause: error },
      );
    }
    if (owner === this.module) return { bucket, readOnly: false };
    const bound = await this.#o.provisioner.get(this.module, {
      kind: "bound",
      key: BoundKey.read(owner, state),
    });
    if (bound !== bucket) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `${this.module} may not read ${owner}/${state}: the provisioner answered ${JSON.stringify(bound)} for it, not the bucket ${bucket}; declare the read in ${this.module}'s manifest`,
        { module: this.module },
      );
    }
    return { bucket, readOnly: true };
  }
}

function post(worker: Worker, message: ToWorker): void {
  worker.postMessage(message);
}

function toCode(code: string): ReplyCodeType {
  return Object.hasOwn(ReplyCode, code) ? (code as ReplyCodeType) : ReplyCode.INTERNAL;
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0] ?? text;
  return line;
}
