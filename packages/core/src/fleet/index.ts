/** The fleet's read model: one place that says what runs, what starts, and what does not, and why. */
export { emptyFleetState, nodeState, type FleetState, type NodeState } from "./state.js";
export { cellReason, type CellReason, type CellState } from "./reason.js";
export { assignedCells, readFleet, type FleetNode, type FleetView } from "./read-model.js";
export {
  SUMMARY_FIRST,
  counts as fleetCounts,
  summarizeFleet,
  summaryContent,
  type SummaryOptions,
} from "./summary.js";
export { SummaryIndex, type FleetChange, type FleetSource } from "./summary-index.js";
export {
  allNodesOf,
  cellsByModule,
  differencesIfWhole,
  fleetStateOf,
  type FleetShape,
} from "./by-key.js";
