/**
 * Every route the view serves, as one table: method, path, the door a request must pass, and
 * the handler. Paths are exact (the page's files included), so nothing outside them is served.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, MeshError, isName, parseToolSubject } from "@mesh/protocol";
import { discoverTools, request, type MeshBus } from "@mesh/bus";
import type { Source } from "./browser/wire.js";
import {
  PAGE_SOURCES,
  ViewEvent,
  type AnswerRequest,
  type CallRequest,
  type CallResult,
  type SessionInfo,
  type ToolEntry,
} from "./browser/wire.js";
import { act, configKeys } from "./action-routes.js";
import { answerAsk, type Answered } from "./answer-ask.js";
import { actingBus, recordAction, type Acting } from "./acting.js";
import type { ViewActions } from "./actions.js";
import { history, logTail, logs, rolloutCanaries, timeline, toolStats } from "./console-routes.js";
import type { FleetFeed } from "./fleet-feed.js";
import type { FirstPaint } from "./first-paint.js";
import { gridQuery } from "./fleet-view.js";
import type { MeshState } from "./mesh-state.js";
import type { Session } from "./view-logins.js";
import {
  SECURITY_HEADERS,
  readBody,
  refuse,
  sendEvent,
  sendFile,
  sendJson,
  sendText,
  type PageFile,
} from "./respond.js";

/**
 * What a request must show besides the token (or, without a token, the view's own host name),
 * which every request needs:
 * - `page`: nothing more; a token given in the URL is moved into a cookie first.
 * - `read`: nothing more.
 * - `act`: the view's own header, an Origin equal to its Host, a JSON body (no cross-site POST).
 */
export type Door = "page" | "read" | "act";

export interface Route {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly auth: Door;
  /** `session` is the request's, on a view with logins. */
  readonly handler: (
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    session?: Session,
  ) => Promise<void> | void;
}

/** What the handlers work with. */
export interface RouteContext {
  readonly bus: MeshBus;
  readonly state: MeshState;
  readonly fleet: FleetFeed;
  /** The first paint from the assigner's summary, while the state is not ready yet. */
  readonly firstPaint: FirstPaint;
  readonly files: ReadonlyMap<string, PageFile>;
  /** Who answers asks, as written in `mesh-answers`. */
  readonly actor: string;
  readonly callTimeoutMs: number;
  /** The CLI's own verbs, when the view was started by it (`mesh view`). */
  readonly actions?: ViewActions;
  /** With logins: the bus each session's access acts with. */
  readonly acting?: Acting;
  /** Every open event stream, so closing the view can end them. */
  readonly streams: Set<ServerResponse>;
  readonly signal: AbortSignal;
  readonly onProblem?: (what: string, error: unknown) => void;
}

/** A POST that acts, as the request's session on a view with logins. */
type ActHandler = (
  c: RouteContext,
  req: IncomingMessage,
  res: ServerResponse,
  session?: Session,
) => Promise<void>;

export function viewRoutes(context: RouteContext): readonly Route[] {
  const c = context;
  return [
    { method: "GET", path: "/", auth: "page", handler: (_q, s) => index(c, s) },
    { method: "GET", path: "/api/state", auth: "read", handler: (_q, s) => state(c, s) },
    { method: "GET", path: "/api/events", auth: "read", handler: (q, s) => events(c, q, s) },
    { method: "GET", path: "/api/grid", auth: "read", handler: (_q, s, u) => grid(c, s, u) },
    { method: "GET", path: "/api/build-log", auth: "read", handler: (_q, s, u) => log(c, s, u) },
    { method: "GET", path: "/api/tools", auth: "read", handler: (_q, s, u) => tools(c, s, u) },
    { method: "GET", path: "/api/logs", auth: "read", handler: (_q, s, u) => logs(c, s, u) },
    {
      method: "GET",
      path: "/api/log-tail",
      auth: "read",
      handler: (q, s, u) => logTail(c, q, s, u),
    },
    { method: "GET", path: "/api/history", auth: "read", handler: (_q, s, u) => history(c, s, u) },
    {
      method: "GET",
      path: "/api/timeline",
      auth: "read",
      handler: (_q, s, u) => timeline(c, s, u),
    },
    {
      method: "GET",
      path: "/api/rollout-canaries",
      auth: "read",
      handler: (_q, s) => rolloutCanaries(c, s),
    },
    {
      method: "GET",
      path: "/api/tool-stats",
      auth: "read",
      handler: (_q, s, u) => toolStats(c, s, u),
    },
    {
      method: "GET",
      path: "/api/config-keys",
      auth: "read",
      handler: (_q, s, u) => configKeys(c, s, u),
    },
    { method: "POST", path: "/api/act", auth: "act", handler: (q, s, _u, w) => act(c, q, s, w) },
    { method: "GET", path: "/api/session", auth: "read", handler: (_q, s, _u, w) => me(c, s, w) },
    {
      method: "POST",
      path: "/api/answer",
      auth: "act",
      handler: (q, s, _u, w) => answer(c, q, s, w),
    },
    { method: "POST", path: "/api/call", auth: "act", handler: (q, s, _u, w) => call(c, q, s, w) },
    ...[...c.files].map(([path, file]): Route => ({
      method: "GET",
      path,
      auth: "read",
      handler: (_q, s) => sendFile(s, file),
    })),
  ];
}

const index = (c: RouteContext, res: ServerResponse): void =>
  sendFile(res, c.files.get("/index.html"));

const PAGE = new Set<Source>(PAGE_SOURCES);

/** The state a page starts from: the page sources whole, the fleet summarised. */
const snapshot = (c: RouteContext) => c.state.snapshot(PAGE_SOURCES, c.fleet.summary());

/**
 * `GET /api/state`: the page's state (JSON), once every source has handed what stands; before
 * that, from the assigner's summary when there is one (decision 0090).
 */
async function state(c: RouteContext, res: ServerResponse): Promise<void> {
  const first = c.state.isReady ? undefined : await c.firstPaint.state();
  if (first !== undefined && !c.state.isReady) return sendJson(res, 200, first);
  await c.state.ready;
  sendJson(res, 200, snapshot(c));
}

/**
 * `GET /api/grid?from=&count=&filter=&attention=1`: a page of the grid; before the state is
 * ready, read by key for the page's nodes alone when the assigner keeps a summary.
 */
async function grid(c: RouteContext, res: ServerResponse, url: URL): Promise<void> {
  const query = gridQuery(url.searchParams);
  const first = c.state.isReady ? undefined : await c.firstPaint.grid(query);
  if (first !== undefined && !c.state.isReady) return sendJson(res, 200, first);
  await c.state.ready;
  sendJson(res, 200, c.fleet.grid(query));
}

/** `GET /api/build-log?key=<module>.<build>`: a build's log (text). */
function log(c: RouteContext, res: ServerResponse, url: URL): void {
  const key = url.searchParams.get("key") ?? "";
  const text = c.state.buildLog(key);
  if (text === undefined) refuse(res, 404, ErrorCode.NOT_FOUND, `no build ${JSON.stringify(key)}`);
  else sendText(res, text);
}

/** How many nodes of one tool `/api/tools` lists; `nodeCount` says how many serve it. */
export const TOOL_NODES_SHOWN = 20;

/**
 * `GET /api/tools?module=&node=`: the tools discovery finds, at most {@link TOOL_NODES_SHOWN}
 * nodes of each tool (each entry says how many serve it), narrowed to a module or a node: the
 * answer's size follows the tools, not the fleet.
 */
async function tools(c: RouteContext, res: ServerResponse, url: URL): Promise<void> {
  const module = url.searchParams.get("module") ?? undefined;
  const node = url.searchParams.get("node") ?? undefined;
  const found = await discoverTools(c.bus, {
    signal: c.signal,
    ...(module === undefined ? {} : { module }),
  });
  const counts = new Map<string, number>();
  const kept: ToolEntry[] = [];
  const shown = new Map<string, number>();
  for (const { service: _service, ...tool } of found) {
    if (node !== undefined && tool.node !== node) continue;
    const key = `${tool.module}/${tool.tool}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if ((shown.get(key) ?? 0) >= TOOL_NODES_SHOWN) continue;
    shown.set(key, (shown.get(key) ?? 0) + 1);
    kept.push({ ...tool, nodeCount: 0 });
  }
  sendJson(
    res,
    200,
    kept.map((t) => ({ ...t, nodeCount: counts.get(`${t.module}/${t.tool}`) ?? 0 })),
  );
}

/**
 * `GET /api/events`: SSE — `snapshot` first, then `change` (of a page source), `fleet`,
 * `problem` and `bus` events.
 */
async function events(c: RouteContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    connection: "keep-alive",
  });
  // Changes that arrive before the first state is sent are already in it.
  res.write(": the mesh's view\n\n");
  // Before the state is ready, the first paint from the summary; the whole state follows.
  const first = c.state.isReady ? undefined : await c.firstPaint.state();
  if (first !== undefined && !c.state.isReady && !res.destroyed) {
    sendEvent(res, ViewEvent.snapshot, first);
  }
  await c.state.ready;
  if (res.destroyed) return;
  sendEvent(res, ViewEvent.snapshot, snapshot(c));
  const unlistenFleet = c.fleet.listen((summary) => sendEvent(res, ViewEvent.fleet, summary));
  const unlistenState = c.state.listen((event) => {
    switch (event.type) {
      case "change":
        if (!PAGE.has(event.change.source)) return;
        return sendEvent(res, ViewEvent.change, event.change);
      case "problem":
        return sendEvent(res, ViewEvent.problem, event.problem);
      case "bus":
        return sendEvent(res, ViewEvent.bus, { bus: event.bus });
    }
  });
  c.streams.add(res);
  // A comment now and then keeps proxies and idle timers from closing a quiet stream.
  const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 25_000);
  const end = (): void => {
    clearInterval(keepAlive);
    unlistenState();
    unlistenFleet();
    c.streams.delete(res);
  };
  req.on("close", end);
  res.on("close", end);
}

/** `GET /api/session`: who the page acts as, and its CSRF token (SessionInfo). */
function me(c: RouteContext, res: ServerResponse, session: Session | undefined): void {
  const info: SessionInfo =
    session === undefined
      ? { who: c.actor, access: "operate", csrf: "", login: false }
      : { who: session.who, access: session.access, csrf: session.csrf, login: true };
  sendJson(res, 200, info);
}

/**
 * `POST /api/answer` `{id, answer}`: answers as `mesh answer` does (`answerAsk`), as the session's
 * operator or the view's actor.
 */
const answer: ActHandler = async (c, req, res, session) => {
  const body = (await readBody(req)) as Partial<AnswerRequest> | undefined;
  const id = body?.id;
  if (
    typeof id !== "string" ||
    !isName("ask", id) ||
    (body?.answer !== "yes" && body?.answer !== "no")
  ) {
    return refuse(
      res,
      400,
      ErrorCode.INVALID_INPUT,
      'send {"id": "<ask id>", "answer": "yes" | "no"}',
    );
  }
  const by = session?.who ?? c.actor;
  const bus = actingBus(c.bus, c.acting, session);
  const what = `mesh answer ${id} ${body.answer}`;
  let answered: Answered;
  try {
    // The call `mesh answer` makes, on the bus this request acts with.
    answered = await answerAsk(bus, { id, answer: body.answer, by }, { signal: c.signal });
  } catch (error) {
    const refusal =
      error instanceof MeshError ? error : new MeshError(ErrorCode.INTERNAL, String(error));
    await recordAction(
      bus,
      session,
      { what, about: `answer ${id}`, ok: false, result: refusal.message },
      c.onProblem,
    );
    if (refusal.code === ErrorCode.NOT_FOUND) {
      return refuse(res, 404, ErrorCode.NOT_FOUND, refusal.message);
    }
    if (session === undefined) throw error;
    return refuse(res, 200, refusal.code, refusal.message);
  }
  await recordAction(
    bus,
    session,
    { what, about: `answer ${id}`, ok: true, result: answered.message },
    c.onProblem,
  );
  sendJson(res, 200, { ok: true, result: answered.value, ms: 0 } satisfies CallResult);
};

/** `POST /api/call` `{subject, input}`: calls a tool; the result or the coded error. */
const call: ActHandler = async (c, req, res, session) => {
  const body = (await readBody(req)) as Partial<CallRequest> | undefined;
  const subject = body?.subject;
  try {
    if (typeof subject !== "string") throw new Error("no subject");
    parseToolSubject(subject);
  } catch {
    return refuse(
      res,
      400,
      ErrorCode.INVALID_INPUT,
      'send {"subject": "mesh.tools.<node>.<module>.<tool>", "input": …}',
    );
  }
  const started = performance.now();
  let result: CallResult;
  try {
    const output = await request(actingBus(c.bus, c.acting, session), subject, body?.input ?? {}, {
      timeoutMs: c.callTimeoutMs,
      signal: c.signal,
    });
    result = { ok: true, result: output, ms: Math.round(performance.now() - started) };
  } catch (error) {
    const meshError =
      error instanceof MeshError
        ? error
        : new MeshError(ErrorCode.INTERNAL, (error as Error).message);
    if (meshError.code === ErrorCode.INTERNAL) c.onProblem?.(`calling ${subject}`, error);
    result = { ok: false, error: { code: meshError.code, message: meshError.message } };
  }
  await recordAction(
    actingBus(c.bus, c.acting, session),
    session,
    {
      what: `mesh call ${subject}`,
      about: `call ${subject}`,
      ok: result.ok,
      result: result.ok
        ? `answered in ${result.ms} ms`
        : `${result.error.code}: ${result.error.message}`,
    },
    c.onProblem,
  );
  // A call that was made and answered with a refusal is the page's result, not an HTTP error.
  sendJson(res, 200, result);
};
