// The node-tools bundle: one file that is both the runtime (on the main thread) and the bootstrap
// of each module's worker (the runtime starts its workers from this same file). The composition
// runs a runtime from exactly one entrypoint, so the two cannot be separate files.
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  const { runRuntimeProcess } = await import("@mesh/runtime");
  // The kit's process shell: a failure is said once with its code, and is the exit code.
  process.exitCode = await runRuntimeProcess({ workerFile: new URL(import.meta.url) });
} else {
  await import("@mesh/sdk/worker");
}
