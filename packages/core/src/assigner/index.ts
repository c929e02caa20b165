export * from "./snapshot.js";
export * from "./assign.js";
