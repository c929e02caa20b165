/**
 * The view: a web page on loopback that shows the mesh live and lets the operator answer asks
 * and call tools. One HTTP server (node:http: a dozen routes need no framework), one shared
 * `MeshState` fed by the bus, and Server-Sent Events to every open page.
 *
 * The routes are one table (routes.ts); router.ts keeps the doors in front of them.
 */
import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { createServer, type RequestListener, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { ErrorCode, MeshError } from "@mesh/protocol";
import type { MeshBus } from "@mesh/bus";
import type { ViewActions } from "./actions.js";
import { FleetFeed } from "./fleet-feed.js";
import { FirstPaint } from "./first-paint.js";
import type { Acting } from "./acting.js";
import type { Access } from "./browser/wire.js";
import { LOGIN_PATH, TOKEN_PARAM, isLoopback } from "./http-guard.js";
import type { ViewLogins } from "./view-logins.js";
import { MeshState } from "./mesh-state.js";
import { pageFiles } from "./page-files.js";
import { refuse } from "./respond.js";
import { router, type Handler } from "./router.js";
import { viewRoutes, type Route, type RouteContext } from "./routes.js";

export interface ViewOptions {
  /** The operator's connection: the view reads, answers and calls with its rights. */
  readonly bus: MeshBus;
  /** Where to listen; loopback unless `expose` is set. */
  readonly host?: string;
  /** 0 (default): any free port; the URL says which. */
  readonly port?: number;
  /**
   * A secret every request must carry. Required with `expose`; on loopback it is optional (other
   * users of the machine can reach loopback, so a shared machine wants one too).
   */
  readonly token?: string;
  /** Listen beyond loopback: the explicit yes that, with a token, allows a non-loopback host. */
  readonly expose?: boolean;
  /** Who answers asks, as written in `mesh-answers` (`by`). */
  readonly actor?: string;
  /**
   * What the page can do besides answering and calling: the CLI's own verbs (`mesh view` hands
   * them). Without them the page shows no actions.
   */
  readonly actions?: ViewActions;
  /**
   * Serve HTTPS with this certificate and key (PEM): the mesh's own, for `mesh view --listen`.
   */
  readonly tls?: { readonly cert: string; readonly key: string };
  /**
   * Ask for a login (decision 0170): every request needs a session made from a one-time login
   * token. Needs `tls` (the session's cookie is Secure). With it, a view may listen beyond
   * loopback without `expose` and a token.
   */
  readonly logins?: ViewLogins;
  /** With logins: the bus each session's access acts with (decision 0171). */
  readonly acting?: Acting;
  /** How long a tool call may take, in ms. */
  readonly callTimeoutMs?: number;
  /** Told about what went wrong behind a page (a source that cannot be read, a failed call). */
  readonly onProblem?: (what: string, error: unknown) => void;
  /** A fleet of more cells than this is painted first from the assigner's summary (default 1,000). */
  readonly firstPaintAbove?: number;
  /** Stops the view, like close(). */
  readonly signal?: AbortSignal;
}

export interface View extends AsyncDisposable {
  /** The page's address; with a token, it carries it once (`?token=`). */
  readonly url: string;
  readonly port: number;
  /** With logins: a one-time link that logs in as `who` with `access`. */
  loginUrl(input: { who: string; access: Access; ttlMs?: number }): string;
  /** The shared state, for tests and embedding. */
  readonly state: MeshState;
  /** Stops serving and closes every page's event stream. Closing twice is harmless. */
  close(): Promise<void>;
}

const MIN_TOKEN_LENGTH = 16;
/** The per-node sources are watched at the latest this long after the start (ms). */
const NODE_SOURCES_LATEST_MS = 10_000;
/** How long closing waits for the watches to have started before it stops them (ms). */
const CLOSE_WAITS_FOR_READY_MS = 10_000;

const delay = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms).unref());

export async function startView(options: ViewOptions): Promise<View> {
  const host = options.host ?? "127.0.0.1";
  const token = options.token;
  checkDoors(host, options);
  const stopping = new AbortController();
  // One listener per watch, per page and per call: many more than the default warning's ten.
  setMaxListeners(1_000, stopping.signal);
  const onOuterAbort = (): void => void close();
  options.signal?.addEventListener("abort", onOuterAbort, { once: true });
  const gate = firstPaintGate(options.bus, stopping.signal, options.firstPaintAbove);
  const { firstPaint, nodeSourcesAfter, paintedOrLate } = gate;
  const state = MeshState.start({
    bus: options.bus,
    signal: stopping.signal,
    nodeSourcesAfter,
    onProblem: (source, error) => options.onProblem?.(`reading ${source}`, error),
  });
  const fleet = new FleetFeed({ state, signal: stopping.signal });
  const streams = new Set<ServerResponse>();
  const routes = await routesOf(options, { state, fleet, firstPaint, streams }, stopping.signal);
  let hosts: ReadonlySet<string> = new Set();
  const handle = router({
    routes,
    token,
    listening: () => ({ port, hosts }),
    ...(options.logins === undefined ? {} : { logins: options.logins }),
  });
  const server = httpServer(options, serving(handle, options.onProblem));
  const port = await listen(server, host, options.port ?? 0).catch(async (error: unknown) => {
    options.signal?.removeEventListener("abort", onOuterAbort);
    paintedOrLate();
    await state.ready; // see close()
    stopping.abort();
    throw error;
  });
  const urlHost = host.includes(":") ? `[${host}]` : host;
  hosts = new Set(
    [urlHost, ...(isLoopback(host) ? ["127.0.0.1", "localhost", "[::1]"] : [])].map(
      (h) => `${h.toLowerCase()}:${port}`,
    ),
  );

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= (async () => {
      options.signal?.removeEventListener("abort", onOuterAbort);
      for (const res of streams) res.end();
      const closed = new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      // Stop the watches only once each has started (or failed to): the NATS client finishes
      // starting a watch whose caller gave up, and one that finishes on a connection the caller
      // has closed meanwhile leaves a heartbeat timer behind that keeps the process alive.
      paintedOrLate();
      // Bounded: a fleet too large for the mirror is never ready (decision 0090).
      await Promise.race([state.ready, delay(CLOSE_WAITS_FOR_READY_MS)]);
      stopping.abort();
      await closed;
    })();
    return closing;
  }

  const base = `${options.tls === undefined ? "http" : "https"}://${urlHost}:${port}/`;
  return {
    url: token === undefined ? base : `${base}?${TOKEN_PARAM}=${encodeURIComponent(token)}`,
    loginUrl: (input) => loginUrl(base, options.logins, input),
    port,
    state,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * The first paint from the summary, and the promise the per-node sources wait for: resolved once
 * a first grid page was painted from the summary, when there is no summary or the fleet is small,
 * when the view closes, or at the latest NODE_SOURCES_LATEST_MS after the start (decision 0090).
 */
function firstPaintGate(
  bus: MeshBus,
  signal: AbortSignal,
  above: number | undefined,
): { firstPaint: FirstPaint; nodeSourcesAfter: Promise<void>; paintedOrLate: () => void } {
  let resolve!: () => void;
  const nodeSourcesAfter = new Promise<void>((r) => (resolve = r));
  const late = setTimeout(() => resolve(), NODE_SOURCES_LATEST_MS);
  late.unref();
  const paintedOrLate = (): void => {
    clearTimeout(late);
    resolve();
  };
  const firstPaint = new FirstPaint({
    bus,
    signal,
    onPainted: paintedOrLate,
    ...(above === undefined ? {} : { above }),
  });
  firstPaint.applies().then(
    (applies) => {
      if (!applies) paintedOrLate();
    },
    () => paintedOrLate(),
  );
  return { firstPaint, nodeSourcesAfter, paintedOrLate };
}

/** The route table over the view's parts. */
async function routesOf(
  options: ViewOptions,
  parts: Pick<RouteContext, "state" | "fleet" | "firstPaint" | "streams">,
  signal: AbortSignal,
): Promise<readonly Route[]> {
  return viewRoutes({
    ...parts,
    bus: options.bus,
    files: await pageFiles(),
    actor: options.actor ?? "operator (view)",
    callTimeoutMs: options.callTimeoutMs ?? 10_000,
    signal,
    ...(options.onProblem === undefined ? {} : { onProblem: options.onProblem }),
    ...(options.actions === undefined ? {} : { actions: options.actions }),
    ...(options.acting === undefined ? {} : { acting: options.acting }),
  });
}

/** HTTPS with the view's certificate, or plain HTTP on loopback. */
const httpServer = (options: ViewOptions, listener: RequestListener): Server =>
  options.tls === undefined
    ? createServer(listener)
    : createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, listener);

function loginUrl(
  base: string,
  logins: ViewLogins | undefined,
  input: { who: string; access: Access; ttlMs?: number },
): string {
  if (logins === undefined) {
    throw new MeshError(ErrorCode.USAGE, "this view asks for no login; open its url");
  }
  return `${base}${LOGIN_PATH.slice(1)}?${TOKEN_PARAM}=${logins.issue(input)}`;
}

/** A random token for a view that listens beyond loopback. */
export const newViewToken = (): string => randomBytes(24).toString("base64url");

/** Refuses to listen beyond loopback without both expose and a token, or with a short token. */
function checkDoors(host: string, options: ViewOptions): void {
  const token = options.token;
  if (options.logins !== undefined && options.tls === undefined) {
    throw new MeshError(
      ErrorCode.VIEW_UNPROTECTED,
      "a view with logins serves HTTPS only (its session cookie is Secure): give it the mesh's certificate",
    );
  }
  if (options.logins !== undefined && token !== undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      "a view takes logins or a token, not both: logins replace the token beyond loopback",
    );
  }
  const loggedIn = options.logins !== undefined && options.tls !== undefined;
  if (!isLoopback(host) && !loggedIn && (options.expose !== true || token === undefined)) {
    throw new MeshError(
      ErrorCode.VIEW_UNPROTECTED,
      `the view was asked to listen on ${JSON.stringify(host)}, beyond this machine, without ${options.expose === true ? "a token" : "the explicit option to expose it and a token"}; ` +
        `anyone reaching it could answer asks and call tools as the operator — keep loopback (and tunnel), or give both expose and a token`,
    );
  }
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH) {
    throw new MeshError(
      ErrorCode.VIEW_UNPROTECTED,
      `the view's token is ${token.length} characters long; give at least ${MIN_TOKEN_LENGTH} random characters`,
    );
  }
}

/** Runs the router; what it throws becomes a coded refusal (or ends a response already begun). */
function serving(handle: Handler, onProblem: ViewOptions["onProblem"]): RequestListener {
  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      onProblem?.(`serving ${req.method ?? "?"} ${req.url ?? "?"}`, error);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const code = error instanceof MeshError ? error.code : ErrorCode.INTERNAL;
      const message =
        error instanceof MeshError ? error.message : "the view failed; its detail is in its log";
      refuse(res, code === ErrorCode.INVALID_INPUT ? 400 : 500, code, message);
    });
  };
}

/** Listens, and says which port; LISTEN_FAILED when it cannot. */
function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new MeshError(
          ErrorCode.LISTEN_FAILED,
          `the view could not listen on ${host}:${port} (${error.code ?? error.message}); pick another port, or an address this machine has`,
          { cause: error },
        ),
      );
    });
    server.listen({ host, port }, () => {
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    });
  });
}
