import { checkName } from "./names.js";

/**
 * The names of the values the mesh derives for a module (`bound` provision asks): its node, the
 * bus urls, the bucket of each state it keeps and reads, the subject of each tool it calls.
 */
export const BoundKey = {
  node: "node",
  servers: "servers",
  /** The build of the module the node runs (its service reports it as its version). */
  build: "build",
  /** The bucket of one of the module's own states. */
  state: (state: string): string => `state.${checkName("state", state)}`,
  /** The bucket of a state the module reads (for a mesh part also `read.mesh.<name>`). */
  read: (module: string, state: string): string =>
    `read.${checkName("module", module)}.${checkName("state", state)}`,
  /**
   * The bucket of one of the mesh's own buckets a mesh part writes (`write.mesh.<name>`, from its
   * manifest's `writes`; decision 0190): what lets its tools' code write it through the runtime.
   */
  write: (module: string, state: string): string =>
    `write.${checkName("module", module)}.${checkName("state", state)}`,
  /** The subject pattern of a tool the module calls (any node: `mesh.tools.*.<module>.<tool>`). */
  call: (module: string, tool: string): string =>
    `call.${checkName("module", module)}.${checkName("tool", tool)}`,
} as const;
