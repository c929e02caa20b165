/**
 * `POST /api/act` and what its forms need: the request's shape checked, then the action the
 * starter of the view handed (the CLI's own verbs), its line and JSON sent back as the result,
 * or its refusal as the CLI would print it.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, MeshError, isName } from "@mesh/protocol";
import type { MeshBus } from "@mesh/bus";
import { actingBus, recordAction, type Acting } from "./acting.js";
import { parseAction, runAction, type ViewActions } from "./actions.js";
import { aboutOf, commandOf } from "./browser/commands.js";
import type { Session } from "./view-logins.js";
import type { ActionResult } from "./browser/wire.js";
import { readBody, refuse, sendJson } from "./respond.js";

export interface ActionContext {
  readonly bus: MeshBus;
  /** With logins: the bus each session's access acts with. */
  readonly acting?: Acting;
  /** Undefined when the view was started without them: it then only reads, answers and calls. */
  readonly actions?: ViewActions;
  readonly onProblem?: (what: string, error: unknown) => void;
}

const noActions = (res: ServerResponse): void =>
  refuse(
    res,
    501,
    ErrorCode.REFUSED,
    "this view was started without the CLI's actions; run `mesh view` to act from the page",
  );

/** `POST /api/act {action, input}` → ActionResult. */
export async function act(
  c: ActionContext,
  req: IncomingMessage,
  res: ServerResponse,
  session?: Session,
): Promise<void> {
  if (c.actions === undefined) return noActions(res);
  const request = parseAction(await readBody(req));
  const bus = actingBus(c.bus, c.acting, session);
  let result: ActionResult;
  try {
    const outcome = await runAction(c.actions, bus, request);
    result = { ok: true, ...outcome };
  } catch (error) {
    const meshError =
      error instanceof MeshError
        ? error
        : new MeshError(ErrorCode.INTERNAL, (error as Error).message);
    if (meshError.code === ErrorCode.INTERNAL) c.onProblem?.(`doing ${request.action}`, error);
    result = { ok: false, error: { code: meshError.code, message: meshError.message } };
  }
  await recordAction(
    bus,
    session,
    {
      what: commandOf(request),
      about: aboutOf(request),
      ok: result.ok,
      result: result.ok ? result.message : `${result.error.code}: ${result.error.message}`,
    },
    c.onProblem,
  );
  // An action that was tried and refused is the page's result, not an HTTP error.
  sendJson(res, 200, result);
}

/** `GET /api/config-keys?module=`: the module's declared config keys and the values set. */
export async function configKeys(c: ActionContext, res: ServerResponse, url: URL): Promise<void> {
  if (c.actions === undefined) return noActions(res);
  const module = url.searchParams.get("module") ?? "";
  if (!isName("module", module)) {
    return refuse(
      res,
      400,
      ErrorCode.INVALID_INPUT,
      `module=${JSON.stringify(module)} is not a module's name`,
    );
  }
  sendJson(res, 200, await c.actions.configKeys(c.bus, module));
}
