/**
 * The daemon kit: what every long-running process of the mesh is built from, written once.
 * Exported from `@mesh/bus`.
 */
export {
  Lifecycle,
  DaemonBase,
  DaemonLife,
  aborted,
  type Daemon,
  type DaemonLifeOptions,
  type RunOptions,
} from "./lifecycle.js";
export {
  DEFAULT_GRACE_MS,
  runUntilSignal,
  signalExitCode,
  stopOnSignals,
  type SignalSource,
  type SignalStop,
  type SignalStopOptions,
} from "./signals.js";
export {
  Backoff,
  DEFAULT_JITTER,
  DEFAULT_MULTIPLIER,
  backoffDelay,
  type BackoffOptions,
  type BackoffPolicy,
} from "./backoff.js";
export {
  appendDurably,
  createFileOnce,
  syncFolder,
  writeFileAtomic,
  type AtomicWriteOptions,
} from "./atomic-file.js";
