/**
 * The broker's users in accounts mode (decision 0080): an nkey per principal's grant, its seed
 * sealed with the vault's key, and a JWT the mesh account's signing key signs with the
 * principal's permissions. A JWT is never changed, and neither is the grant of a key: permissions
 * that move give a new key and a new JWT, and the old key is revoked whole once its grace is over
 * (decision 0091). Reusing the key made each re-sign wait for the next whole second, so that the
 * new JWT's issue time was past the revocation of the old one (~0.7 s of every assign).
 */
import { ErrorCode, MeshError, type Credential } from "@mesh/protocol";
import { newUserKey, type AccountAuthority } from "@mesh/bus";
import type { DesiredPrincipal, IssuedUser } from "./broker.js";
import type { Vault } from "./vault.js";

/** Signs `p` with a new key: nothing waits, and no other JWT ever carries this key. */
export async function signUser(
  accounts: AccountAuthority,
  vault: Vault,
  p: DesiredPrincipal,
): Promise<IssuedUser> {
  const key = newUserKey();
  const jwt = await accounts.issue({
    name: p.user,
    publicKey: key.publicKey,
    permissions: p.permissions,
    ...(p.expiresAt === undefined ? {} : { expiresAt: p.expiresAt }),
  });
  return {
    user: p.user,
    node: p.node,
    module: p.module,
    kind: p.kind,
    permissions: p.permissions,
    publicKey: key.publicKey,
    seed: vault.seal(key.seed, p.user),
    jwt,
    ...(p.expiresAt === undefined ? {} : { expiresAt: p.expiresAt }),
  };
}

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
