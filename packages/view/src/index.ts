/**
 * `@mesh/view`: the operator's web page — its server (`startView`), the state it mirrors from the
 * bus, and what the server and the page say to each other.
 */
export { MeshState, type StateEvent } from "./mesh-state.js";
export { isLoopback } from "./http-guard.js";
export type { ActionOutcome, ConfigKeys, ViewActions } from "./actions.js";
export type { Acting } from "./acting.js";
export { answerAsk, type AnswerInput, type Answered } from "./answer-ask.js";
export {
  LOGIN_KEY_BYTES,
  LOGIN_TOKEN_TTL_MS,
  ViewLogins,
  loginToken,
  type Session,
} from "./view-logins.js";
export {
  CSRF_HEADER,
  CSRF_VALUE,
  FLEET_SOURCES,
  GRID_MAX_MODULES,
  GRID_MAX_NODES,
  PAGE_SOURCES,
  Source,
  ViewEvent,
  type Access,
  type ActionName,
  type ActionRequest,
  type ActionResult,
  type AnswerRequest,
  type BuildSummary,
  type BusState,
  type CallRequest,
  type CallResult,
  type CellVerdict,
  type Change,
  type FleetSummary,
  type GridCell,
  type GridColumn,
  type GridPage,
  type GridQuery,
  type GridRow,
  type NodeState,
  type SessionInfo,
  type Snapshot,
  type SourceProblem,
  type ToolEntry,
} from "./browser/wire.js";
export { readShape } from "./fleet-by-key.js";
export { gridPage, gridQuery, indexFleet, type FleetIndex, type FleetInput } from "./fleet-view.js";
export { newViewToken, startView, type View, type ViewOptions } from "./start-view.js";
