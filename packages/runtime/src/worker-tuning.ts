/**
 * What the runtime says of a module (its state in the status file) and how its worker is run
 * (the tuning, defaults here; `MESH_RUNTIME_<X>_MS` in env.ts overrides them for tests).
 */
import type { ResourceLimits } from "node:worker_threads";
import { CallHeader, ErrorCode, MeshError } from "@mesh/protocol";

/** Where a module stands, as the host reads it from the status file. */
export const ModuleState = {
  /** The worker is importing the module's entries. */
  starting: "starting",
  /** Loaded; its tools are served. */
  serving: "serving",
  /** It failed to load, crashed or hung; `error` says how, and it is restarted after a backoff. */
  failing: "failing",
  /**
   * Loaded before and not called for `idleMs`: its worker is stopped, its service still
   * registered; the next call starts it again and waits for it.
   */
  idle: "idle",
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
  /**
   * How its last start went, in ms: the worker's start to its tools loaded (`load`), then to its
   * service's subscriptions on the server (`serve`; 0 when the service stayed registered).
   */
  readonly last?: { readonly loadMs: number; readonly serveMs: number };
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
  /** The first restart's delay; it doubles with each failure in a row (less some jitter), up to `maxBackoffMs`. */
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** A worker that served this long before failing starts its backoff over. */
  readonly healthyAfterMs: number;
  readonly resourceLimits: ResourceLimits;
  /**
   * Memory a module may hold outside its V8 heap (Buffers, ArrayBuffers), which `resourceLimits`
   * does not count; over it, its worker is ended and it is failing. 0: not measured.
   */
  readonly externalLimitMb: number;
  /** How often a worker measures its memory outside the heap. */
  readonly memoryProbeMs: number;
  /** A module not called for this long has its worker stopped until its next call. 0: never. */
  readonly idleMs: number;
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
  externalLimitMb: 256,
  memoryProbeMs: 100,
  idleMs: 10 * 60_000,
};

/** A call's deadline: its `Mesh-Timeout-Ms` header, cut to the longest allowed, or the default. */
export function deadlineOf(headers: ReadonlyMap<string, string>, tuning: WorkerTuning): number {
  let text: string | undefined;
  for (const [key, value] of headers) {
    if (key.toLowerCase() === CallHeader.timeoutMs.toLowerCase()) text = value;
  }
  if (text === undefined) return tuning.defaultTimeoutMs;
  const ms = Number(text);
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `the ${CallHeader.timeoutMs} header is ${JSON.stringify(text)}, not a whole number of milliseconds above 0; send e.g. 5000, or leave it out for ${tuning.defaultTimeoutMs}`,
    );
  }
  return Math.min(ms, tuning.maxTimeoutMs);
}
