/** `mesh-indexer`'s process (decision 0190): the indexer on the module's own credential. */
import { Indexer } from "../indexer.js";
import { runPartProcess } from "./part-process.js";

export const main = (): Promise<number> =>
  runPartProcess("indexer", (bus, log) => Indexer.create({ bus, log }));
