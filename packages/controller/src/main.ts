#!/usr/bin/env node
/** `mesh-controller --root DIR [--credential FILE] [--bus-dir DIR]`: the controller process. */
import { parseArgs } from "node:util";
import { runControllerProcess } from "./daemon.js";

const { values } = parseArgs({
  options: {
    root: { type: "string", default: "./.mesh" },
    credential: { type: "string" },
    "bus-dir": { type: "string" },
  },
});
try {
  await runControllerProcess({
    root: values.root,
    ...(values.credential === undefined ? {} : { credential: values.credential }),
    ...(values["bus-dir"] === undefined ? {} : { busDir: values["bus-dir"] }),
  });
} catch (error) {
  process.stderr.write(`mesh-controller: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
