export * from "./pack.js";
export * from "./source.js";
export * from "./build-source.js";
export * from "./daemon.js";
export * from "./assigner/assigner.js";
export * from "./builder.js";
export * from "./indexer.js";
export * from "./run.js";
export * from "./register.js";
export { checkArchiveBytes } from "./archive-check.js";
/** For tests (here and in the CLI): hand-made hostile archives. */
export { rawTar, rawTarStream, type RawEntry } from "./test-archives.js";
