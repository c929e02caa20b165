/**
 * `@mesh/core`: the pure decisions — manifest checks, composition, permissions from manifests,
 * the assigner's chain of rules, the fleet's read model, fingerprints. Deterministic: no clock,
 * bus, disk or process.
 */
export { closest } from "./suggest.js";
export { boundValues } from "./bound-values.js";
export {
  formatProblem,
  problem,
  type ManifestPath,
  type ManifestProblem,
  type ManifestRuleId,
} from "./manifest-problem.js";
export { checkManifest, refused, type ManifestCheck } from "./manifest-check.js";
export { checkConfigValue, describeConfigViolations } from "./config-schema.js";
export {
  MANIFEST_FILE_NAMES,
  MAX_MANIFEST_TEXT,
  manifestFormatOf,
  parseManifestText,
  type ManifestFormat,
} from "./manifest-text.js";
export { builtEntrypoint } from "./bundle-run.js";
export {
  CompositionRule,
  compose,
  type Composition,
  type CompositionRefusal,
  type CompositionRuleId,
  type LeftOut,
  type NodeResolution,
} from "./composition.js";
export { compositionInput, type CompositionInputOptions } from "./composition-input.js";
export { canonicalJson, fingerprintOf } from "./fingerprint.js";
export {
  buildGrant,
  controllerGrant,
  partGrant,
  meshResourceRights,
  type PartManifest,
  hostGrant,
  moduleGrant,
  operatorGrant,
  viewGrant,
  VIEW_CONDITION_MODULE,
  renewalGrant,
  runtimeGrant,
  type DerivedGrant,
  type GrantManifest,
  type GrantProblem,
  type OwnerStates,
  type Owners,
  type RuntimeGrant,
  type ServedManifest,
  type StateDeclaration,
} from "./permissions.js";
export { isAllowed, subjectMatches, type SubjectAction } from "./permissions/match.js";
export { allowedModules, mcpGrant, mcpPrincipal } from "./permissions/mcp.js";
export {
  ASSIGNER_WRITES,
  AssignerConditionKind,
  CELL_RULES,
  NODE_RULES,
  RULES,
  assign,
  assignerSetBack,
  canaryOf,
  cellConditionName,
  conditionName,
  emptySnapshot,
  foldHave,
  marksOf,
  resolveRolloutPolicy,
  type AssignOptions,
  type AssignResult,
  type AssignerCondition,
  type AssignerOwn,
  type AssignerSnapshot,
  type AssignerWrite,
  type HaveRecord,
  type HaveReport,
  type OpenCondition,
  type Unwanted,
} from "./assigner/index.js";
export {
  allNodesOf,
  assignedCells,
  cellReason,
  cellsByModule,
  differencesIfWhole,
  emptyFleetState,
  fleetStateOf,
  type FleetShape,
  nodeState,
  SummaryIndex,
  type FleetChange,
  type FleetSource,
  readFleet,
  SUMMARY_FIRST,
  fleetCounts,
  summarizeFleet,
  summaryContent,
  type SummaryOptions,
  type CellReason,
  type CellState,
  type FleetNode,
  type FleetState,
  type FleetView,
  type NodeState,
} from "./fleet/index.js";
export { ArchiveEntryCheck, DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from "./archive-entry.js";
