/**
 * `@mesh/sdk`: what a module's code imports to define its tools and reach its values, states
 * and conditions. It talks to the runtime over its worker's port, never over the bus.
 *
 * ```ts
 * import { defineModule, defineTool, z } from "@mesh/sdk";
 * export default defineModule({
 *   tools: [
 *     defineTool({
 *       name: "greet",
 *       description: "Greets someone by name.",
 *       input: z.object({ name: z.string() }),
 *       handler: async ({ name }) => ({ text: `Hello, ${name}` }),
 *     }),
 *   ],
 * });
 * ```
 */
export {
  defineModule,
  defineTool,
  type ConfigAccess,
  type ConfigItem,
  type ConfigOf,
  type ConfigSchema,
  type ModuleConfigOf,
  type TypedModule,
  type UntypedConfig,
  type ModuleSpec,
  type StateHandle,
  type Tool,
  type ToolContext,
  type ToolLogger,
  type ToolSpec,
  type ValueKind,
} from "./define.js";
export { ToolError, isToolError } from "./tool-error.js";
// The runtime's wire to the worker is in `@mesh/sdk/internal`, not here.
export { ToolErrorCode, type LogLevel } from "./worker-protocol.js";
/**
 * The schema library tools are defined with, re-exported so a module uses the same copy as its
 * SDK (schemas convert to JSON Schema with `z.toJSONSchema`).
 *
 * ```ts
 * import { z } from "@mesh/sdk";
 * const input = z.object({ name: z.string().min(1) });
 * ```
 */
export { z } from "zod";
