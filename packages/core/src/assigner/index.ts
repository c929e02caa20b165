export * from "./snapshot.js";
export * from "./assign.js";
export { RULES, CELL_RULES, NODE_RULES } from "./rules/index.js";
export { marksOf } from "./model.js";
export {
  AssignerConditionKind,
  cellConditionName,
  conditionName,
  type AssignerCondition,
} from "./conditions.js";
