/**
 * Waiting for a state instead of sleeping: `check` is asked until it returns something (not
 * undefined or false), within a deadline that catches a hang, never a slow machine.
 *
 * ```ts
 * const have = await waitFor(async () => (await haveOf("hello"))?.health === "healthy" && have, {
 *   what: "hello healthy",
 * });
 * ```
 */
import { ErrorCode, MeshError } from "@mesh/protocol";
import { stretched } from "./harness.js";

export interface WaitForOptions {
  /** What is waited for, for the error. */
  readonly what?: string;
  /** The deadline in ms as it takes here, stretched by MESH_TEST_TIME_FACTOR; default 30 s. */
  readonly timeout?: number;
  /** Between two checks; default 50 ms. */
  readonly intervalMs?: number;
}

export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: WaitForOptions = {},
): Promise<T> {
  const allowed = stretched(options.timeout ?? 30_000);
  const until = Date.now() + allowed;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      last = undefined;
    } catch (error) {
      last = error;
    }
    if (Date.now() > until) {
      const why =
        last === undefined
          ? ""
          : ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})`;
      throw new MeshError(
        ErrorCode.TIMEOUT,
        `${options.what ?? "the condition"} did not happen within ${allowed} ms${why}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}
