/**
 * `@mesh/sdk/internal`: the wire between the runtime and a module's worker, for the runtime
 * (`@mesh/runtime`) alone. Module code imports `@mesh/sdk`; nothing here is for it.
 */
export {
  MODULE_BRAND,
  PROTOCOL_VERSION,
  PROVIDED_MODULES,
  PROVIDED_SPECIFIERS,
  type AskOp,
  type AskParams,
  type BrandedModule,
  type BrandedTool,
  type FromWorker,
  type ProvisionItem,
  type ProvisionKind,
  type ToWorker,
  type ToolInfo,
  type WorkerHost,
  type WorkerSpare,
  type WorkerStart,
} from "./worker-protocol.js";
