/**
 * Who may use the view, decided per request. The view acts with the operator's rights (it answers
 * asks and calls every tool), so three doors are closed:
 *
 * - Another machine: the view listens on loopback unless told otherwise, and listening wider
 *   needs a token, which every request must then carry (`?token=` once, then a cookie; or a
 *   header).
 * - Another site in the operator's own browser: a page elsewhere may send a form or a `fetch` to
 *   127.0.0.1. A POST must carry the view's own header (a cross-site form cannot set it, and a
 *   cross-site `fetch` with it needs a preflight the view never grants) and, when the browser
 *   says where it comes from, an Origin that is the view's own.
 * - DNS rebinding: a name that resolves to 127.0.0.1 makes another site same-origin with the
 *   view. The Host header still carries that name, so a view without a token serves only its
 *   own loopback names. (With a token the name does not matter: the token's cookie is never sent
 *   to another name, and an exposed view is reached by whatever name the network gives it.)
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import { CSRF_HEADER, CSRF_VALUE } from "./browser/wire.js";

/**
 * The token's cookie, named after the view's port: a browser sends a host's cookies to every port
 * on it, so two views on one machine would otherwise overwrite each other's token.
 */
export const tokenCookie = (port: number): string => `mesh_view_token_${port}`;
export const TOKEN_PARAM = "token";
/** A session's cookie (a view with logins), named after the port like the token's. */
export const sessionCookie = (port: number): string => `mesh_view_session_${port}`;
/** Where a login link leads: `/login?token=<one-time token>`. */
export const LOGIN_PATH = "/login";
export const TOKEN_HEADER = "x-mesh-view-token";

/** Whether a host to listen on is this machine only. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare === "localhost" || bare === "::1") return true;
  return isIP(bare) === 4 && bare.startsWith("127.");
}

/** Compares in constant time, so a guess's answer says nothing about how close it was. */
export function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token a request carries: the header, the cookie, or the URL's parameter, in that order. */
export function requestToken(
  request: IncomingMessage,
  url: URL,
  cookieName: string,
): string | undefined {
  const header = request.headers[TOKEN_HEADER];
  if (typeof header === "string" && header !== "") return header;
  const bearer = request.headers.authorization;
  if (typeof bearer === "string" && bearer.startsWith("Bearer ")) return bearer.slice(7);
  const cookie = cookieValue(request.headers.cookie, cookieName);
  if (cookie !== undefined) return cookie;
  return url.searchParams.get(TOKEN_PARAM) ?? undefined;
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      return decodeURIComponent(part.slice(eq + 1).trim());
    }
  }
  return undefined;
}

/** Whether the Host header names this view: one of its own hosts, on its port. */
export function hostAllowed(request: IncomingMessage, allowed: ReadonlySet<string>): boolean {
  const host = request.headers.host;
  return typeof host === "string" && allowed.has(host.toLowerCase());
}

/**
 * Why a POST is refused as cross-site, or undefined when it is the view's own page that sent it:
 * the custom header is present, and the Origin (when the browser sends one) is the host the
 * request was sent to.
 */
export function crossSiteRefusal(request: IncomingMessage): string | undefined {
  if (request.headers[CSRF_HEADER] !== CSRF_VALUE) {
    return `a POST must carry the header ${CSRF_HEADER}: ${CSRF_VALUE}, which the view's page sends and another site cannot`;
  }
  const origin = request.headers.origin;
  if (origin !== undefined) {
    let host: string;
    try {
      host = new URL(origin).host.toLowerCase();
    } catch {
      return `the request's Origin ${JSON.stringify(origin)} is not a URL`;
    }
    if (host !== (request.headers.host ?? "").toLowerCase()) {
      return `the request comes from ${JSON.stringify(origin)}, not from the view's own page`;
    }
  }
  const type = request.headers["content-type"] ?? "";
  if (!type.startsWith("application/json")) {
    return `a POST's body must be JSON (Content-Type: application/json), got ${JSON.stringify(type)}`;
  }
  return undefined;
}
