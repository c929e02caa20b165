export * from "./start-view.js";
export { MeshState, type StateEvent } from "./mesh-state.js";
export { isLoopback } from "./http-guard.js";
export type * from "./browser/wire.js";
export {
  Source,
  ViewEvent,
  CSRF_HEADER,
  CSRF_VALUE,
  PAGE_SOURCES,
  FLEET_SOURCES,
} from "./browser/wire.js";
export { gridPage, gridQuery, indexFleet, type FleetIndex, type FleetInput } from "./fleet-view.js";
