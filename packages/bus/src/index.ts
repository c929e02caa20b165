export * from "./bus-errors.js";
export * from "./credential-file.js";
export * from "./mesh-bus.js";
export * from "./kv-bucket.js";
export * from "./services.js";
export * from "./say.js";
export * from "./artifacts.js";
export * from "./layout-setup.js";
