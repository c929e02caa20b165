/**
 * Serves a route table: every request passes the view's doors (see http-guard.ts) — the token or
 * the view's own host name, then its route's door — before its handler runs.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode } from "@mesh/protocol";
import {
  TOKEN_PARAM,
  crossSiteRefusal,
  hostAllowed,
  requestToken,
  sameToken,
  tokenCookie,
} from "./http-guard.js";
import { SECURITY_HEADERS, refuse } from "./respond.js";
import type { Route } from "./routes.js";

export interface RouterOptions {
  readonly routes: readonly Route[];
  /** The secret every request must carry; without it, only the view's own host names are served. */
  readonly token: string | undefined;
  /** The port and host names the view answers to, known once it listens. */
  readonly listening: () => { readonly port: number; readonly hosts: ReadonlySet<string> };
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function router(options: RouterOptions): Handler {
  const table = new Map(options.routes.map((r) => [`${r.method} ${r.path}`, r]));
  const paths = new Set(options.routes.map((r) => r.path));
  const { token } = options;
  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://view.invalid");
    const { port, hosts } = options.listening();
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

function notServed(res: ServerResponse, method: string, path: string, known: boolean): void {
  if (known || (method !== "GET" && method !== "POST")) {
    return refuse(res, 405, ErrorCode.REFUSED, `${method} ${path} is not served`);
  }
  refuse(res, 404, ErrorCode.NOT_FOUND, method === "POST" ? `no POST ${path}` : "no such page");
}
