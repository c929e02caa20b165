#!/usr/bin/env node
/**
 * The runtime's process, as the host starts it: `MESH_TOOL_MODULES`, `MESH_BROKER_FILE`,
 * optionally `MESH_RUNTIME_STATUS` and the operator variables. Runs until SIGTERM or SIGINT,
 * then stops every module within a grace period; exits with the kit's process shell's code.
 */
import { runRuntimeProcess } from "./process-main.js";

process.exitCode = await runRuntimeProcess();
