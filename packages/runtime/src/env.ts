import { Env } from "@mesh/protocol";
import type { WorkerTuning } from "./module-worker.js";

/** Where the runtime writes each module's load result and tools (README.md, "Reporting"). */
export const StatusEnv = Env.runtimeStatus;

/**
 * Tuning read from the environment (`MESH_RUNTIME_<NAME>_MS`), for tests and unusual machines;
 * the host sets none of these.
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
  } as const;
  for (const [field, variable] of Object.entries(names)) {
    const value = Number(env[variable]);
    if (env[variable] !== undefined && Number.isSafeInteger(value) && value > 0) out[field] = value;
  }
  return out;
}
