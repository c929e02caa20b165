/**
 * The broker's users in accounts mode (decision 0080): an nkey per principal, its seed sealed
 * with the vault's key, and a JWT the mesh account's signing key signs with the principal's
 * permissions. A JWT is never changed: permissions that move give a new JWT for the same key,
 * signed in a later second than the one before, and the older ones are revoked up to the second
 * before it.
 */
import { setTimeout as delay } from "node:timers/promises";
import { ErrorCode, MeshError, type Credential } from "@mesh/protocol";
import { jwtIssuedAt, newUserKey, type AccountAuthority } from "@mesh/bus";
import type { DesiredPrincipal, IssuedUser } from "./broker.js";
import type { Vault } from "./vault.js";

/** Signs `p`: with `kept`'s key when given (its permissions moved), else with a new key. */
export async function signUser(
  accounts: AccountAuthority,
  vault: Vault,
  p: DesiredPrincipal,
  kept: IssuedUser | undefined,
): Promise<IssuedUser & { readonly issuedAt: number }> {
  let publicKey: string;
  let seed: IssuedUser["seed"];
  if (kept?.publicKey !== undefined && kept.seed !== undefined) {
    publicKey = kept.publicKey;
    seed = kept.seed;
    // A JWT carries its second; the revocation of the old one must not reach the new one.
    const last = kept.issuedAt ?? 0;
    while (Math.floor(Date.now() / 1000) <= last) await delay(50);
  } else {
    const key = newUserKey();
    publicKey = key.publicKey;
    seed = vault.seal(key.seed, p.user);
  }
  const jwt = await accounts.issue({
    name: p.user,
    publicKey,
    permissions: p.permissions,
    ...(p.expiresAt === undefined ? {} : { expiresAt: p.expiresAt }),
  });
  return {
    user: p.user,
    node: p.node,
    module: p.module,
    kind: p.kind,
    permissions: p.permissions,
    publicKey,
    seed,
    jwt,
    issuedAt: jwtIssuedAt(jwt),
    ...(p.expiresAt === undefined ? {} : { expiresAt: p.expiresAt }),
  };
}

/** The second up to which a key's JWTs are revoked when a JWT of `issuedAt` replaces them. */
export const staleBefore = (issuedAt: number): number => issuedAt - 1;

/** The credential of a signed user: its JWT and its seed, opened from the vault. */
export function signedCredential(
  u: IssuedUser,
  vault: Vault,
  where: {
    readonly servers: readonly string[];
    readonly fingerprint?: string;
    readonly ca?: string;
  },
): Credential {
  if (u.seed === undefined || u.jwt === undefined) {
    throw new MeshError(ErrorCode.INTERNAL, `${u.user} is not a signed user`);
  }
  return {
    servers: [...where.servers],
    user: u.user,
    jwt: u.jwt,
    seed: vault.open(u.seed, u.user).toString("utf8"),
    node: u.node,
    module: u.module,
    ...(where.fingerprint === undefined ? {} : { fingerprint: where.fingerprint }),
    ...(where.ca === undefined ? {} : { ca: where.ca }),
  };
}
