#!/usr/bin/env node
/**
 * The runtime's process, as the host starts it: `MESH_TOOL_MODULES`, `MESH_BROKER_FILE`,
 * optionally `MESH_RUNTIME_STATUS` and the operator variables. Runs until SIGTERM or SIGINT,
 * then stops every module within a grace period.
 */
import { isMeshError } from "@mesh/protocol";
import { runRuntimeProcess } from "./process-main.js";

try {
  process.exitCode = await runRuntimeProcess();
} catch (error) {
  const message = isMeshError(error) ? `${error.message} [${error.code}]` : String(error);
  process.stderr.write(`[node-tools] cannot start: ${message}\n`);
  process.exitCode = 1;
}
