import { ToolErrorCode } from "./worker-protocol.js";

/**
 * An error a tool's handler throws to answer with a code other than INTERNAL. Anything else a
 * handler throws goes back to the caller as INTERNAL, its detail only in the runtime's log.
 *
 * ```ts
 * throw new ToolError("NOT_FOUND", `no order ${JSON.stringify(id)}; list orders with orders/list`);
 * ```
 */
export class ToolError extends Error {
  override readonly name = "ToolError";
  readonly code: ToolErrorCode;
  /** Recognised across copies of the SDK: a module bundle carries its own. */
  readonly meshToolError = true;

  constructor(code: ToolErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = Object.hasOwn(ToolErrorCode, code) ? code : ToolErrorCode.INTERNAL;
  }
}

/** Whether `error` is a ToolError from any copy of the SDK.
 *
 * ```ts
 * try {
 *   await ctx.provision.get("config", "greeting");
 * } catch (error) {
 *   if (isToolError(error) && error.code === "NOT_FOUND") return { text: "Hello" };
 *   throw error;
 * }
 * ```
 */
export function isToolError(error: unknown): error is ToolError {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { meshToolError?: unknown }).meshToolError === true &&
    typeof (error as { code?: unknown }).code === "string" &&
    Object.hasOwn(ToolErrorCode, (error as { code: string }).code)
  );
}
