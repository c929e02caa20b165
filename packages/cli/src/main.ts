#!/usr/bin/env node
/** `mesh`: the operator's command line. */
import { runCli } from "./program.js";

process.exitCode = await runCli(process.argv);
