export * from "./host.js";
export * from "./applied-state.js";
export * from "./plan.js";
export * from "./archives.js";
export * from "./health.js";
export * from "./provisioner.js";
export {
  Supervisor,
  DEFAULT_BACKOFF,
  logFiles,
  type Backoff,
  type ProcessSpec,
} from "./supervisor.js";
export { runHost, parseHostArgs } from "./main.js";
