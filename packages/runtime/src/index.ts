export * from "./runtime.js";
export * from "./module-worker.js";
export * from "./provisioner.js";
export * from "./tool-modules.js";
export * from "./env.js";
export * from "./process-main.js";
