#!/usr/bin/env node
/** `mesh`: the operator's command line. */
import { reportError } from "./output.js";
import { runCli } from "./program.js";

// Whatever escapes a verb (a rejection nobody awaited, an error thrown in a callback) is still
// told as one coded line and an exit code, never as a raw stack trace.
const json = process.argv.includes("--json");
const escaped = (error: unknown): void => {
  process.exitCode = reportError(error, json);
  process.exit();
};
process.on("uncaughtException", escaped);
process.on("unhandledRejection", escaped);

process.exitCode = await runCli(process.argv);
