/**
 * `@mesh/host`: the host daemon that applies a node's composition (processes, bundles, needs)
 * and reports what it has.
 */
export { parseHostArgs, runHost } from "./main.js";
export { Host, type HostOptions } from "./host.js";
export {
  DEFAULT_ARCHIVE_LIMITS,
  checkArchive,
  fetchVerified,
  unpackBeside,
  type ArchiveLimits,
  type FetchArtifact,
} from "./archives.js";
export { DEFAULT_HEALTH_RULES, runtimeUnreachable } from "./health.js";
export { desiredOf, type Desired, type DesiredProcess } from "./plan.js";
export { Launcher, DEFAULT_HANDOVER_STEP_MS, type LauncherOptions } from "./launch/launcher.js";
export { runLauncher } from "./launch/run-launcher.js";
export { LaunchEnv, hostBuildDir } from "./launch/wire.js";
