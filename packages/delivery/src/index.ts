export * from "./pack.js";
export * from "./source.js";
export * from "./build-source.js";
