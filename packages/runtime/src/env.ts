import { Env } from "@mesh/protocol";
import type { WorkerTuning } from "./module-worker.js";

/** Where the runtime writes each module's load result and tools (README.md, "Reporting"). */
export const StatusEnv = Env.runtimeStatus;

/**
 * Set (to 1) on a runtime the host boots ahead as a standby: it loads, connects and boots a spare
 * worker, then waits for SIGUSR2 to serve (README.md, "Standby").
 */
export const StandbyEnv = Env.runtimeStandby;

/**
 * Tuning read from the environment (`MESH_RUNTIME_<NAME>_MS`), for tests and unusual machines;
 * the host sets only the idle time, when its node has one of its own.
 */
export function tuningFromEnv(env: NodeJS.ProcessEnv): Partial<WorkerTuning> {
  const out: Record<string, number> = {};
  const names = {
    defaultTimeoutMs: "MESH_RUNTIME_DEFAULT_TIMEOUT_MS",
    maxTimeoutMs: "MESH_RUNTIME_MAX_TIMEOUT_MS",
    heartbeatMs: "MESH_RUNTIME_HEARTBEAT_MS",
    hangMs: "MESH_RUNTIME_HANG_MS",
    initialBackoffMs: "MESH_RUNTIME_INITIAL_BACKOFF_MS",
    maxBackoffMs: "MESH_RUNTIME_MAX_BACKOFF_MS",
    healthyAfterMs: "MESH_RUNTIME_HEALTHY_AFTER_MS",
    idleMs: Env.runtimeIdleMs,
    memoryProbeMs: "MESH_RUNTIME_MEMORY_PROBE_MS",
    externalLimitMb: "MESH_RUNTIME_EXTERNAL_LIMIT_MB",
  } as const;
  for (const [field, variable] of Object.entries(names)) {
    const value = Number(env[variable]);
    // 0 is a value for the idle time and the memory limit (never idle, not measured).
    if (env[variable] !== undefined && Number.isSafeInteger(value) && value >= 0)
      out[field] = value;
  }
  return out;
}

/** The variable naming each module's own idle time: `<module>=<ms>`, comma-separated. */
export const IdleEnv = Env.toolIdle;

/** Reads `MESH_TOOL_IDLE`; an entry that is not `<module>=<whole ms>` is ignored. */
export function idleFromEnv(text: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of (text ?? "").split(",")) {
    const [module, ms] = entry.trim().split("=");
    const value = Number(ms);
    if (module !== undefined && module !== "" && Number.isSafeInteger(value) && value >= 0)
      out.set(module, value);
  }
  return out;
}
