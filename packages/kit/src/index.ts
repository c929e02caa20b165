/**
 * `@mesh/kit`: what every long-running process of the mesh is built from, written once — its
 * lifecycle, its stop on signals, one backoff, one retry loop, one abortable wait (and one with a
 * deadline), one deadline on an operation, one work queue, and the atomic and durable file
 * writes. It depends on `@mesh/protocol` alone: nothing here speaks NATS.
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
export { delay, type DelayOptions } from "./delay.js";
export { withDeadline, type DeadlineOptions, type DeadlineWork } from "./deadline.js";
export { retry, type RetryAttempt, type RetryOptions } from "./retry.js";
export { once } from "./once.js";
export { within } from "./within.js";
export { WorkQueue, type WorkQueueOptions } from "./work-queue.js";
export { createLogger, loggerFrom, type Logger, type LoggerOptions } from "./logger.js";
export {
  ExitCode,
  runProcess,
  type ProcessContext,
  type ProcessShellOptions,
} from "./process-shell.js";
