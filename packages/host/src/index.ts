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
