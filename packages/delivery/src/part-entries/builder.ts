/** `mesh-builder`'s process (decision 0190): the builder on the module's own credential. */
import { Builder } from "../builder.js";
import { runPartProcess } from "./part-process.js";

export const main = (): Promise<number> =>
  runPartProcess("builder", (bus, log) => Builder.create({ bus, log }));
