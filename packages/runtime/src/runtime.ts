/**
 * The tool runtime (`node-tools`): every served module in a worker of its own, its tools served
 * as one NATS service per module, its values asked of the node's provisioner client as that
 * module, and what each module's load came to written where the host reads it.
 */
import { Env, MESH_VERSION } from "@mesh/protocol";
import { type MeshBus } from "@mesh/bus";
import {
  DaemonLife,
  Lifecycle,
  aborted,
  writeFileAtomic,
  type Daemon,
  type RunOptions,
} from "@mesh/kit";
import {
  DEFAULT_TUNING,
  ModuleState,
  ModuleWorker,
  type ModuleStatus,
  type WorkerTuning,
} from "./module-worker.js";
import { Provisioner } from "./provisioner.js";
import { SpareWorker } from "./spare-worker.js";
import { StandbyEnv, StatusEnv } from "./env.js";
import { ToolStatsCounter } from "./tool-stats.js";

/** The version of the status file's shape (README.md, "Reporting"). */
export const STATUS_VERSION = 1;

/** What the status file holds. */
export interface RuntimeStatus {
  readonly v: typeof STATUS_VERSION;
  readonly node: string;
  readonly pid: number;
  readonly state: Lifecycle;
  /** When this was written (ISO 8601). */
  readonly at: string;
  /**
   * When the process started, when a standby was told to take over (a standby only), and when
   * its runtime was created (connected to the bus).
   */
  readonly started: {
    readonly process: string;
    readonly takeover?: string;
    readonly runtime: string;
  };
  /** Whether the runtime reaches the bus now, and since when (ISO 8601). */
  readonly bus: { readonly connected: boolean; readonly since: string };
  readonly modules: Readonly<Record<string, ModuleStatus>>;
}

export interface RuntimeOptions {
  /** The runtime's connection, as `node-tools` of its node. */
  readonly bus: MeshBus;
  /** Each module's entry files (absolute paths), as `parseToolModules` reads them. */
  readonly modules: ReadonlyMap<string, readonly string[]>;
  /** A module's own idle time (ms; 0: never idle), where it differs from the tuning's. */
  readonly idle?: ReadonlyMap<string, number>;
  /** The node; the credential's when omitted. */
  readonly node?: string;
  readonly tuning?: Partial<WorkerTuning>;
  /** Where to write the status (atomically, on every change); nowhere when omitted. */
  readonly statusFile?: string;
  /** Told every status change. */
  readonly onStatus?: (status: RuntimeStatus) => void;
  /** Told every request rejected before a handler (a JetStream delivery into a tool subject). */
  readonly onRejected?: (why: string, subject: string) => void;
  /** The environment module code sees; the runtime's own, without its credential's path, by default. */
  readonly env?: Record<string, string>;
  readonly log?: (text: string) => void;
  /**
   * The file each module's worker starts from: the SDK's `@mesh/sdk/worker` by default. The
   * shipped `node-tools` bundle is one file that is both the runtime and the worker bootstrap
   * (it checks `isMainThread`), so it names itself here.
   */
  readonly workerFile?: URL;
  /** A spare worker booted ahead (`spareFor`); one is made when omitted. */
  readonly spare?: SpareWorker;
  /** When the process, a standby until then, was told to take over (ISO 8601). */
  readonly takeover?: string;
  /**
   * How often the tools' call counts are filed (ms; decision 0172): TOOL_STATS_INTERVAL_MS by
   * default; 0 counts nothing (what the bench compares against).
   */
  readonly toolStatsMs?: number;
}

/** Variables module code must not see: the runtime's credential and its wiring. */
const HIDDEN_FROM_MODULES: readonly string[] = [
  Env.brokerFile,
  Env.toolModules,
  StatusEnv,
  StandbyEnv,
  // Moves with the composition: a standby taking over keeps its spare worker when only this moved.
  Env.toolIdle,
];

export class Runtime implements Daemon, AsyncDisposable {
  readonly node: string;
  readonly provisioner: Provisioner;
  readonly #workers = new Map<string, ModuleWorker>();
  /** One worker booted ahead, for the next module that needs one. */
  readonly #spare: SpareWorker;
  /** Counts every served tool's calls and errors; undefined when counting is off. */
  readonly #stats: ToolStatsCounter | undefined;
  readonly #options: RuntimeOptions;
  readonly #life = new DaemonLife({});
  readonly #started: RuntimeStatus["started"];
  #writing: Promise<void> = Promise.resolve();
  #stopping: Promise<void> | undefined;

  private constructor(options: RuntimeOptions) {
    this.#options = options;
    this.#started = {
      process: new Date(performance.timeOrigin).toISOString(),
      ...(options.takeover === undefined ? {} : { takeover: options.takeover }),
      runtime: new Date().toISOString(),
    };
    this.node = options.node ?? options.bus.credential.node;
    const log = options.log ?? ((text: string) => process.stderr.write(`${text}\n`));
    this.provisioner = new Provisioner({ bus: options.bus, node: this.node, log });
    const tuning: WorkerTuning = { ...DEFAULT_TUNING, ...options.tuning };
    const workerFile = options.workerFile ?? new URL(import.meta.resolve("@mesh/sdk/worker"));
    const env = options.env ?? moduleEnv(process.env);
    this.#spare = options.spare ?? spareFor(options);
    this.#stats =
      options.toolStatsMs === 0
        ? undefined
        : new ToolStatsCounter({
            bus: options.bus,
            node: this.node,
            log,
            ...(options.toolStatsMs === undefined ? {} : { intervalMs: options.toolStatsMs }),
          });
    for (const [module, entries] of [...options.modules].sort(([a], [b]) => a.localeCompare(b))) {
      this.#workers.set(
        module,
        new ModuleWorker({
          module,
          node: this.node,
          entries,
          bus: options.bus,
          provisioner: this.provisioner,
          tuning,
          spare: this.#spare,
          ...idleOf(options.idle, module),
          workerFile,
          env,
          version: MESH_VERSION,
          ...(this.#stats === undefined ? {} : { stats: this.#stats }),
          onStatus: () => this.#changed(),
          onRejected: (why, subject) => {
            log(`[node-tools] rejected a message on ${subject}: ${why}`);
            options.onRejected?.(why, subject);
          },
          log,
        }),
      );
    }
  }

  /**
   * Starts a worker for every module and returns at once; `status()` says how each load went. No
   * modules is not an error: `node-tools` may be assigned where nothing has tools yet, and the
   * runtime then serves nothing until the host restarts it with some.
   */
  static create(options: RuntimeOptions): Runtime {
    const runtime = new Runtime(options);
    for (const worker of runtime.#workers.values()) worker.start();
    runtime.#life.set(Lifecycle.running);
    runtime.#changed();
    runtime.#followBus();
    return runtime;
  }

  /**
   * Says in the status whether the bus is reached: a runtime that cannot reach it serves nothing,
   * and the host reports its modules failing when that lasts.
   */
  #followBus(): void {
    this.#options.bus.onConnection((now, before) => {
      const moved = (now.status === "connected") !== (before.status === "connected");
      if (moved && this.#life.state === Lifecycle.running) this.#changed();
    });
  }

  get state(): Lifecycle {
    return this.#life.state;
  }

  /** Serves until the signal aborts, then drains and stops (as `drain()` does). */
  run(options: RunOptions): Promise<void> {
    return this.#life.run(options, async (signal) => {
      await aborted(signal);
      await this.drain();
    });
  }

  status(): RuntimeStatus {
    const modules: Record<string, ModuleStatus> = {};
    for (const [name, worker] of this.#workers) modules[name] = worker.status;
    return {
      v: STATUS_VERSION,
      node: this.node,
      pid: process.pid,
      state: this.#life.state,
      at: new Date().toISOString(),
      started: this.#started,
      bus: {
        connected: this.#options.bus.connection.status === "connected",
        since: this.#options.bus.connection.since,
      },
      modules,
    };
  }

  /** Whether a spare worker is booted and waiting for the next module that needs one. */
  get spareReady(): boolean {
    return this.#spare.ready;
  }

  /** One module's supervisor, or undefined when the runtime does not serve it. */
  module(name: string): ModuleWorker | undefined {
    return this.#workers.get(name);
  }

  /** Stops every worker, service and watch, and writes the last status. Stopping twice is harmless. */
  stop(): Promise<void> {
    return this.#end((worker) => worker.stop());
  }

  /**
   * Drains, then stops: every module stops taking calls (what the server already sent is still
   * answered), the calls in flight finish within their deadlines, then everything stops. What a
   * runtime being replaced does, so that a caller never sees the handover.
   */
  drain(): Promise<void> {
    return this.#end((worker) => worker.drain());
  }

  #end(how: (worker: ModuleWorker) => Promise<void>): Promise<void> {
    this.#stopping ??= (async () => {
      this.#life.set(Lifecycle.stopping);
      this.#changed();
      await this.#spare.close();
      await Promise.all([...this.#workers.values()].map(how));
      // After the workers: the calls a drain let finish are in the last window filed.
      await this.#stats?.stop();
      await this.provisioner.close();
      this.#life.set(Lifecycle.stopped);
      this.#changed();
      await this.#writing;
    })();
    return this.#stopping;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  #changed(): void {
    if (this.#life.state === Lifecycle.starting) return;
    const status = this.status();
    this.#options.onStatus?.(status);
    const file = this.#options.statusFile;
    if (file === undefined) return;
    // One write at a time, each complete: the host never reads a half-written file.
    this.#writing = this.#writing.then(async () => {
      try {
        // Not fsynced: it says what this process does now, nothing a power cut should keep.
        await writeFileAtomic(file, `${JSON.stringify(status, null, 2)}\n`, {
          mode: 0o644,
          durable: false,
        });
      } catch (error) {
        (this.#options.log ?? console.error)(
          `[node-tools] could not write the status file ${file}: ${String(error)}`,
        );
      }
    });
  }
}

/** Whether every module has finished loading, one way or the other. */
export function settled(status: RuntimeStatus): boolean {
  return Object.values(status.modules).every((m) => m.state !== ModuleState.starting);
}

/** The environment module code sees: the runtime's, without its credential and wiring. */
export function moduleEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && !HIDDEN_FROM_MODULES.includes(key)) out[key] = value;
  }
  return out;
}

function idleOf(
  idle: ReadonlyMap<string, number> | undefined,
  module: string,
): { idleMs?: number } {
  const ms = idle?.get(module);
  return ms === undefined ? {} : { idleMs: ms };
}

/** The spare worker a runtime with these options keeps (prepared by the caller, or by the runtime). */
export function spareFor(
  options: Pick<RuntimeOptions, "workerFile" | "env" | "tuning">,
): SpareWorker {
  const tuning: WorkerTuning = { ...DEFAULT_TUNING, ...options.tuning };
  return new SpareWorker({
    workerFile: options.workerFile ?? new URL(import.meta.resolve("@mesh/sdk/worker")),
    env: options.env ?? moduleEnv(process.env),
    resourceLimits: tuning.resourceLimits,
    ...(tuning.externalLimitMb > 0
      ? {
          external: {
            limitBytes: tuning.externalLimitMb * 1024 * 1024,
            probeMs: tuning.memoryProbeMs,
          },
        }
      : {}),
  });
}
