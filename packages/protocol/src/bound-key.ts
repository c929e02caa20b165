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
  /** The bucket of a state the module reads. */
  read: (module: string, state: string): string =>
    `read.${checkName("module", module)}.${checkName("state", state)}`,
  /** The subject pattern of a tool the module calls (any node: `mesh.tools.*.<module>.<tool>`). */
  call: (module: string, tool: string): string =>
    `call.${checkName("module", module)}.${checkName("tool", tool)}`,
} as const;
