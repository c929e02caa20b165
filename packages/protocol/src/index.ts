export * from "./errors.js";
export * from "./names.js";
export * from "./layout.js";
export * from "./manifest.js";
export * from "./resources.js";
export * from "./values.js";
export * from "./credential.js";
export * from "./version.js";
