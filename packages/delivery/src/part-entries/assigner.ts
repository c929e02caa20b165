/**
 * `mesh-assigner`'s process (decision 0190): the assigner on the module's own credential. Its
 * tools (`put`, `unput`) are another bundle of the same module, which the runtime loads without a
 * credential and serves: a process never serves (seed 003).
 */
import { Assigner } from "../assigner/assigner.js";
import { runPartProcess } from "./part-process.js";

export const main = (): Promise<number> =>
  runPartProcess("assigner", (bus, log) => Assigner.create({ bus, log }));
