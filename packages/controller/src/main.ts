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
process.exitCode = await runControllerProcess({
  root: values.root,
  ...(values.credential === undefined ? {} : { credential: values.credential }),
  ...(values["bus-dir"] === undefined ? {} : { busDir: values["bus-dir"] }),
});
