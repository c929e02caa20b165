/**
 * What the worker bootstrap does before any module code loads, so that code in one module's
 * worker cannot end the runtime process every other module is served from, and cannot grow
 * outside its heap unseen:
 *
 * - `process.kill` (and `process._kill`, which it calls) never deliver a signal to the runtime's
 *   own process, its process group (pid 0 or a negative pid) or the host that started it: such a
 *   call ends the module's own worker instead (`onSelf`), and the runtime reports the module
 *   failing with what it tried. A signal to any other process is sent as before. Both are fixed in
 *   place (not writable, not configurable), so module code cannot put the originals back.
 *   `process.exit` already ends only the worker, and Node refuses `process.abort` in a worker.
 * - Memory outside the V8 heap (Buffers, ArrayBuffers, typed arrays: `resourceLimits` does not
 *   count them) is measured every `probeMs` with `v8.getHeapStatistics()` of this worker's isolate,
 *   taken before module code could replace it; over `externalLimitBytes` the runtime is told, and
 *   ends the worker.
 */
import { getHeapStatistics } from "node:v8";

/**
 * Replaces process.kill and process._kill with versions that turn a signal to the runtime itself
 * into `onSelf` (which ends the worker and does not return).
 */
export function guardSignals(onSelf: (pid: number, signal: string | number) => never): void {
  const proc = process as NodeJS.Process & {
    _kill?: (pid: number, signal: number) => number;
  };
  const own = new Set([process.pid, process.ppid]);
  const refused = (pid: unknown): boolean =>
    typeof pid === "number" && (own.has(pid) || own.has(-pid) || pid <= 0);
  const kill = proc.kill.bind(proc);
  const guardedKill = (pid: number, signal?: string | number): true => {
    // Signal 0 only asks whether a process exists: allowed for every pid.
    if (signal !== 0 && refused(pid)) onSelf(pid, signal ?? "SIGTERM");
    return kill(pid, signal);
  };
  const rawKill = proc._kill?.bind(proc);
  if (rawKill !== undefined) {
    Object.defineProperty(proc, "_kill", {
      value: (pid: number, signal: number): number => {
        if (signal !== 0 && refused(pid)) onSelf(pid, signal);
        return rawKill(pid, signal);
      },
      writable: false,
      configurable: false,
      enumerable: false,
    });
  }
  Object.defineProperty(proc, "kill", {
    value: guardedKill,
    writable: false,
    configurable: false,
    enumerable: true,
  });
}

/** This isolate's memory, as the probe reads it. */
export interface WorkerMemory {
  /** Bytes of the V8 heap in use (bounded by the worker's `resourceLimits`). */
  readonly heap: number;
  /** Bytes held outside the heap: Buffers, ArrayBuffers, typed arrays, external strings. */
  readonly external: number;
}

/** Reads this isolate's memory with the function taken now, before module code runs. */
export function memoryProbe(): () => WorkerMemory {
  const read = getHeapStatistics;
  return () => {
    const stats = read();
    return { heap: stats.used_heap_size, external: stats.external_memory };
  };
}

/**
 * Measures every `probeMs`; calls `over` once the external memory passes the limit (the runtime
 * then ends the worker). The timer does not keep the worker alive.
 */
export function watchMemory(
  limitBytes: number,
  probeMs: number,
  over: (memory: WorkerMemory) => void,
): () => WorkerMemory {
  const probe = memoryProbe();
  let told = false;
  const timer = setInterval(() => {
    const memory = probe();
    if (!told && memory.external > limitBytes) {
      told = true;
      over(memory);
    }
  }, probeMs);
  timer.unref();
  return probe;
}
