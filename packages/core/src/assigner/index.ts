// The assigner's pure decision (decision 0030): one function from a snapshot to the writes, and
// its chain of rules as data.
export {
  emptySnapshot,
  type AssignerOwn,
  type AssignerSnapshot,
  type HaveRecord,
  type HaveReport,
  type OpenCondition,
} from "./snapshot.js";
export {
  ASSIGNER_WRITES,
  assign,
  runCellRules,
  type AssignOptions,
  type AssignResult,
  type AssignerWrite,
} from "./assign.js";
export { marksOf, type Unwanted } from "./model.js";
export { canaryOf } from "./rollout-canary.js";
export { resolveRolloutPolicy } from "./rollout-policy.js";
export { assignerSetBack, foldHave } from "./assigner-set-back.js";
export { CELL_RULES, NODE_RULES, RULES } from "./rules/index.js";
export { askId, widen as widening } from "./rules/widening.js";
export {
  AssignerConditionKind,
  cellConditionName,
  conditionName,
  type AssignerCondition,
} from "./conditions.js";
