/**
 * Logging in to a view that listens beyond loopback (decision 0170): a one-time login token —
 * signed with the view's login key, naming who and with which access, expiring soon — is
 * redeemed once for a session, which lives in memory and in an HttpOnly, Secure, SameSite=Strict
 * cookie. `mesh view` prints a link with one; `mesh view-token` makes one with the same key.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { ErrorCode, MeshError } from "@mesh/protocol";
import type { Access } from "./browser/wire.js";

/** How long a login token can wait to be used (default). */
export const LOGIN_TOKEN_TTL_MS = 15 * 60_000;
/** How long a session lasts after its login. */
export const SESSION_TTL_MS = 12 * 3600_000;
/** A login key's length in bytes. */
export const LOGIN_KEY_BYTES = 32;

export interface Session {
  /** The cookie's value: random, never derived from the token. */
  readonly id: string;
  readonly who: string;
  readonly access: Access;
  /** Sent by the page with every POST (`x-mesh-view-csrf`); read from `GET /api/session`. */
  readonly csrf: string;
  readonly expiresAt: number;
  /** Aborted when the session ends (a logout, or its expiry noticed): its event streams close. */
  readonly ended: AbortSignal;
}

interface TokenBody {
  /** who */
  readonly w: string;
  /** access */
  readonly a: Access;
  /** expires, ms since the epoch */
  readonly e: number;
  /** nonce: each token is redeemed once */
  readonly n: string;
}

const sign = (key: Buffer, body: string): string =>
  createHmac("sha256", key).update(body).digest("base64url");

/** A login token for `who`: `<body>.<signature>`, both base64url. */
export function loginToken(
  key: Buffer,
  input: { who: string; access: Access; ttlMs?: number; now?: number },
): string {
  const body: TokenBody = {
    w: input.who,
    a: input.access,
    e: (input.now ?? Date.now()) + (input.ttlMs ?? LOGIN_TOKEN_TTL_MS),
    n: randomBytes(16).toString("base64url"),
  };
  const encoded = Buffer.from(JSON.stringify(body)).toString("base64url");
  return `${encoded}.${sign(key, encoded)}`;
}

const refused = (why: string): MeshError =>
  new MeshError(
    ErrorCode.PERMISSION_DENIED,
    `this login link ${why}; make a new one with \`mesh view-token\` (or start \`mesh view\` again)`,
  );

export class ViewLogins {
  readonly #key: Buffer;
  readonly #now: () => number;
  readonly #sessions = new Map<string, { session: Session; end: AbortController }>();
  /** Redeemed nonces, until their token would have expired anyway. */
  readonly #used = new Map<string, number>();

  constructor(options: { key: Buffer; now?: () => number }) {
    if (options.key.length < 16) {
      throw new MeshError(ErrorCode.INVALID_INPUT, "a view's login key is at least 16 bytes");
    }
    this.#key = options.key;
    this.#now = options.now ?? Date.now;
  }

  /** A login token this view redeems (what `mesh view` prints as a link). */
  issue(input: { who: string; access: Access; ttlMs?: number }): string {
    return loginToken(this.#key, { ...input, now: this.#now() });
  }

  /** The token's session, once: a second use, an expired or a forged token is refused. */
  redeem(token: string): Session {
    const now = this.#now();
    this.#prune(now);
    const [encoded = "", signature = ""] = token.split(".");
    const expected = Buffer.from(sign(this.#key, encoded));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw refused("is not one of this view's");
    }
    const body = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8")) as TokenBody;
    if (body.e <= now) throw refused("has expired");
    if (this.#used.has(body.n)) throw refused("was used already (each link logs in once)");
    this.#used.set(body.n, body.e);
    const end = new AbortController();
    const session: Session = {
      id: randomBytes(32).toString("base64url"),
      who: body.w,
      access: body.a === "read" ? "read" : "operate",
      csrf: randomBytes(24).toString("base64url"),
      expiresAt: now + SESSION_TTL_MS,
      ended: end.signal,
    };
    this.#sessions.set(session.id, { session, end });
    return session;
  }

  /** The live session of a cookie's value. */
  session(id: string | undefined): Session | undefined {
    if (id === undefined) return undefined;
    const live = this.#sessions.get(id);
    if (live === undefined) return undefined;
    if (live.session.expiresAt <= this.#now()) {
      this.end(id);
      return undefined;
    }
    return live.session;
  }

  /**
   * Ends a session (a logout): its cookie's value is forgotten, so whoever still holds it is
   * refused as without a login, and its open event streams close. True when it was live.
   */
  end(id: string): boolean {
    const live = this.#sessions.get(id);
    if (live === undefined) return false;
    this.#sessions.delete(id);
    live.end.abort();
    return true;
  }

  #prune(now: number): void {
    for (const [nonce, expires] of this.#used) if (expires <= now) this.#used.delete(nonce);
    for (const [id, s] of this.#sessions) if (s.session.expiresAt <= now) this.end(id);
  }
}
