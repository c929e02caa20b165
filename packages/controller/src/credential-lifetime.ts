/**
 * How long the broker's signed credentials live, and when each is renewed (decision 0150).
 *
 * A host's, a runtime's and a module's JWT expire `lifetime` after they were signed, less up to
 * a tenth of it at random: JWTs signed together (a fleet joining, a controller renewing what
 * came due while it was stopped) then expire apart, and since the server closes a connection
 * whose JWT expires (the client logs in again at once with its renewed one), their reconnects
 * are spread too. The broker signs the same key again once a third of the lifetime is left, so
 * the renewed JWT reaches its holder long before the old one lapses; the key, and so the grant,
 * stay. An expiring JWT lets its revocation be pruned once it has expired (revocations.ts).
 *
 * Join users expire with their token; mcp credentials are handed to `mesh mcp` once and kept,
 * with no holder to renew them for, so they carry no expiry.
 */
import type { IssuedUser } from "./broker-users-file.js";
import type { PrincipalKind } from "./principals.js";

/** The lifetime a credential is signed for when the controller is not told another. */
export const DEFAULT_CREDENTIAL_LIFETIME_MS = 6 * 3600_000;

/** The fraction of the lifetime left when a credential is signed again. */
const RENEW_WHEN_LEFT = 1 / 3;

/** How much of the lifetime, at most, is taken off at random, so expiries spread. */
const SPREAD = 1 / 10;

/**
 * How long a node's renewal login lives: how long a node may be away (stopped, cut off) and
 * still come back on its own, its own JWT long expired. It is renewed with the host's others.
 */
export const RENEWAL_LIFETIME_MS = 30 * 24 * 3600_000;

/** The kinds whose JWTs expire and are renewed. */
export function isRenewed(kind: PrincipalKind): boolean {
  return kind === "host" || kind === "runtime" || kind === "module" || kind === "renewal";
}

/** The lifetime of a `kind`'s JWT when the others' is `lifetimeMs`. */
const lifetimeOf = (kind: PrincipalKind, lifetimeMs: number): number =>
  kind === "renewal" ? Math.max(RENEWAL_LIFETIME_MS, lifetimeMs) : lifetimeMs;

/** When a `kind`'s credential signed at `now` expires (ISO time). */
export function expiryFor(
  kind: PrincipalKind,
  now: Date,
  lifetimeMs: number,
  random: () => number = Math.random,
): string {
  const lifetime = lifetimeOf(kind, lifetimeMs);
  const spread = Math.floor(lifetime * SPREAD * random());
  return new Date(now.getTime() + lifetime - spread).toISOString();
}

/** When `u` is to be signed again (epoch ms), or undefined when its JWT does not expire. */
export function renewAt(u: IssuedUser, lifetimeMs: number): number | undefined {
  if (u.expiresAt === undefined || !isRenewed(u.kind) || u.jwt === undefined) return undefined;
  return Date.parse(u.expiresAt) - lifetimeOf(u.kind, lifetimeMs) * RENEW_WHEN_LEFT;
}

/** The expiry of `u`'s JWT in unix seconds, as a revocation keeps it; undefined without one. */
export function expirySeconds(u: Pick<IssuedUser, "expiresAt">): number | undefined {
  return u.expiresAt === undefined ? undefined : Math.ceil(Date.parse(u.expiresAt) / 1000);
}
