export * from "./snapshot.js";
export * from "./assign.js";
export { RULES, CELL_RULES, NODE_RULES } from "./rules/index.js";
export { marksOf } from "./model.js";
