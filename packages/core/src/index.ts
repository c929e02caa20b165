export * from "./manifest-problem.js";
export * from "./manifest-check.js";
export * from "./manifest-text.js";
export * from "./bundle-run.js";
export * from "./composition.js";
export * from "./fingerprint.js";
export * from "./permissions.js";
export * from "./assigner/index.js";
