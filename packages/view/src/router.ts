/**
 * Serves a route table: every request passes the view's doors (see http-guard.ts) — the token or
 * the view's own host name, then its route's door — before its handler runs.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { LOGOUT_PATH, SESSION_CSRF_HEADER } from "./browser/wire.js";
import {
  TOKEN_PARAM,
  LOGIN_PATH,
  cookieValue,
  crossSiteRefusal,
  hostAllowed,
  requestToken,
  sameToken,
  sessionCookie,
  tokenCookie,
} from "./http-guard.js";
import type { Session, ViewLogins } from "./view-logins.js";
import { SECURITY_HEADERS, refuse } from "./respond.js";
import type { Route } from "./routes.js";

export interface RouterOptions {
  readonly routes: readonly Route[];
  /**
   * Logins (a view beyond loopback, decision 0170): every request but `/login` needs a session,
   * and a POST its CSRF token besides the view's header and Origin.
   */
  readonly logins?: ViewLogins;
  /** The secret every request must carry; without it, only the view's own host names are served. */
  readonly token: string | undefined;
  /** The port and host names the view answers to, known once it listens. */
  readonly listening: () => { readonly port: number; readonly hosts: ReadonlySet<string> };
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function router(options: RouterOptions): Handler {
  const table = new Map(options.routes.map((r) => [`${r.method} ${r.path}`, r]));
  const paths = new Set(options.routes.map((r) => r.path));
  const { token, logins } = options;
  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://view.invalid");
    const { port, hosts } = options.listening();
    if (logins !== undefined) return withLogin(logins, port, table, paths)(req, res, url);
    if (token === undefined && !hostAllowed(req, hosts)) {
      return refuse(res, 421, ErrorCode.REFUSED, "this view serves only its own host names");
    }
    if (token !== undefined && !sameToken(requestToken(req, url, tokenCookie(port)), token)) {
      return refuse(
        res,
        401,
        ErrorCode.PERMISSION_DENIED,
        "this view needs its token: open the URL it printed",
      );
    }
    const method = req.method === "HEAD" ? "GET" : (req.method ?? "?");
    const route = table.get(`${method} ${url.pathname}`);
    if (route === undefined) return notServed(res, method, url.pathname, paths.has(url.pathname));
    if (route.auth === "page" && token !== undefined && url.searchParams.has(TOKEN_PARAM)) {
      // The token moves into a cookie and out of the address bar (and history, and referrers).
      url.searchParams.delete(TOKEN_PARAM);
      res.writeHead(303, {
        ...SECURITY_HEADERS,
        "set-cookie": `${tokenCookie(port)}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`,
        location: `${url.pathname}${url.search}`,
      });
      res.end();
      return;
    }
    if (route.auth === "act") {
      const refusal = crossSiteRefusal(req);
      if (refusal !== undefined) return refuse(res, 403, ErrorCode.REFUSED, refusal);
    }
    await route.handler(req, res, url);
  };
}

/** The doors of a view with logins: `/login` makes a session, everything else needs one. */
function withLogin(
  logins: ViewLogins,
  port: number,
  table: ReadonlyMap<string, Route>,
  paths: ReadonlySet<string>,
): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> {
  return async (req, res, url) => {
    const method = req.method === "HEAD" ? "GET" : (req.method ?? "?");
    if (method === "GET" && url.pathname === LOGIN_PATH) return login(logins, port, res, url);
    const session = logins.session(cookieValue(req.headers.cookie, sessionCookie(port)));
    if (session === undefined) {
      return refuse(
        res,
        401,
        ErrorCode.PERMISSION_DENIED,
        "this view needs a login: open the link `mesh view` printed, or make one with `mesh view-token`",
      );
    }
    if (method === "POST" && url.pathname === LOGOUT_PATH) {
      return logout(logins, port, req, res, session);
    }
    const route = table.get(`${method} ${url.pathname}`);
    if (route === undefined) return notServed(res, method, url.pathname, paths.has(url.pathname));
    if (route.auth === "act") {
      const refusal = crossSiteRefusal(req) ?? csrfRefusal(req, session);
      if (refusal !== undefined) return refuse(res, 403, ErrorCode.REFUSED, refusal);
    }
    // What is still open when the session ends (its event streams) ends with it.
    const close = (): void => void res.end();
    session.ended.addEventListener("abort", close, { once: true });
    res.on("close", () => session.ended.removeEventListener("abort", close));
    await route.handler(req, res, url, session);
  };
}

/**
 * `POST /logout`: ends the session on the server (its cookie's value is then refused as no login,
 * whoever holds it) and clears the cookie. A POST with the view's doors, so another site cannot
 * log an operator out either.
 */
function logout(
  logins: ViewLogins,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  session: Session,
): void {
  const refusal = crossSiteRefusal(req) ?? csrfRefusal(req, session);
  if (refusal !== undefined) return refuse(res, 403, ErrorCode.REFUSED, refusal);
  logins.end(session.id);
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "set-cookie": `${sessionCookie(port)}=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0`,
  });
  res.end(JSON.stringify({ ok: true, result: { who: session.who, ended: true } }));
}

/** `GET /login?token=`: the one-time token becomes a session cookie, and leaves the address bar. */
function login(logins: ViewLogins, port: number, res: ServerResponse, url: URL): void {
  let session;
  try {
    session = logins.redeem(url.searchParams.get(TOKEN_PARAM) ?? "");
  } catch (error) {
    const message = error instanceof MeshError ? error.message : "this login link is not valid";
    return refuse(res, 401, ErrorCode.PERMISSION_DENIED, message);
  }
  res.writeHead(303, {
    ...SECURITY_HEADERS,
    "set-cookie": `${sessionCookie(port)}=${session.id}; HttpOnly; Secure; SameSite=Strict; Path=/`,
    location: "/",
  });
  res.end();
}

function csrfRefusal(req: IncomingMessage, session: Session): string | undefined {
  const given = req.headers[SESSION_CSRF_HEADER];
  return typeof given === "string" && sameToken(given, session.csrf)
    ? undefined
    : `a POST must carry the session's token in ${SESSION_CSRF_HEADER} (the view's page reads it from /api/session)`;
}

function notServed(res: ServerResponse, method: string, path: string, known: boolean): void {
  if (known || (method !== "GET" && method !== "POST")) {
    return refuse(res, 405, ErrorCode.REFUSED, `${method} ${path} is not served`);
  }
  refuse(res, 404, ErrorCode.NOT_FOUND, method === "POST" ? `no POST ${path}` : "no such page");
}
