/**
 * `@mesh/runtime`: the tool runtime (`node-tools`), every served module in a worker of its own.
 */
export { Runtime, type RuntimeOptions, type RuntimeStatus } from "./runtime.js";
export {
  DEFAULT_TUNING,
  ModuleState,
  type ModuleStatus,
  type WorkerTuning,
} from "./worker-tuning.js";
export { parseToolModules } from "./tool-modules.js";
export { StatusEnv } from "./env.js";
export { ToolStatsCounter, type ToolStatsOptions } from "./tool-stats.js";
export { runRuntimeProcess, type RuntimeProcessOptions } from "./process-main.js";
