#!/usr/bin/env node
/**
 * `mesh-delivery <indexer|builder|assigner> --credential FILE`: one delivery daemon as a process,
 * as `mesh up` starts them (the same as `mesh indexer|builder|assigner`). The credential may also
 * come from MESH_BROKER_FILE.
 */
import { runDelivery } from "./run.js";

process.exitCode = await runDelivery(process.argv.slice(2));
