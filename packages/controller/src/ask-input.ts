/** Reading an ask's body against its schema, as every controller endpoint does. */
import type { z } from "zod";
import type { Request } from "@mesh/bus";
import { ErrorCode, MeshError } from "@mesh/protocol";

/**
 * `request`'s JSON body as `schema` reads it, or INVALID_INPUT: `<what> is <shape>: <path>:
 * <problem>; …`, where `what` says the ask ("a join request") and `shape` what it must hold.
 */
export function readAsk<T>(schema: z.ZodType<T>, request: Request, what: string, shape: string): T {
  const parsed = schema.safeParse(request.json());
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `${what} is ${shape}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  }
  return parsed.data;
}
