/** Reading an ask's body against its schema, as every controller endpoint does. */
import type { z } from "zod";
import type { EndpointSpec, Request } from "@mesh/bus";
import { ErrorCode, MeshError } from "@mesh/protocol";
import type { ControllerEndpoint } from "./controller-api.js";

/**
 * `request`'s JSON body as `schema` reads it, or INVALID_INPUT: `<what> is <shape>: <path>:
 * <problem>; …`, where `what` says the ask ("a join request") and `shape` what it must hold.
 */
export function readAsk<S extends z.ZodType>(
  schema: S,
  request: Request,
  what: string,
  shape: string,
): z.infer<S> {
  const parsed = schema.safeParse(request.json());
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `${what} is ${shape}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  }
  return parsed.data;
}

/**
 * `endpoint` served under its subject (named by its last token): each request's ask read against
 * its schema as `readAsk` reads it, with its `what` and `shape`, then answered by `answer`.
 */
export function answering<Ask extends z.ZodType, Answer extends z.ZodType>(
  endpoint: ControllerEndpoint<Ask, Answer>,
  answer: (ask: z.infer<Ask>) => Promise<z.infer<Answer>>,
): EndpointSpec {
  return {
    name: endpoint.subject.slice(endpoint.subject.lastIndexOf(".") + 1),
    subject: endpoint.subject,
    handler: (request) => answer(readAsk(endpoint.ask, request, endpoint.what, endpoint.shape)),
  };
}
