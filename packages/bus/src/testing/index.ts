// `@mesh/bus/testing`: what tests of every package use to get a real bus.
export * from "./harness.js";
export * from "./probe.js";
export * from "./stock-client.js";
export * from "./cluster.js";
export * from "./accounts-harness.js";
