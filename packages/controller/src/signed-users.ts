/**
 * The broker's users in accounts mode (decision 0080): an nkey per principal's grant, its seed
 * sealed with the vault's key, and a JWT the mesh account's signing key signs with the
 * principal's permissions. A JWT is never changed, and neither is the grant of a key: permissions
 * that move give a new key and a new JWT, and the old key is revoked whole once its grace is over
 * (decision 0091). Reusing the key made each re-sign wait for the next whole second, so that the
 * new JWT's issue time was past the revocation of the old one (~0.7 s of every assign).
 */
import { ErrorCode, MeshError, type Credential } from "@mesh/protocol";
import { newUserKey, type AccountAuthority } from "@mesh/bus/server";
import type { IssuedUser } from "./broker-users-file.js";
import type { DesiredPrincipal, SharedLogin } from "./principals.js";
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

/**
 * Signs `u`'s key again with its grant and a later expiry: a renewal (credential-lifetime.ts).
 * The key stays, so nothing is revoked and its holder needs no restart, only the new JWT.
 */
export async function renewUser(
  accounts: AccountAuthority,
  u: IssuedUser,
  expiresAt: string,
): Promise<IssuedUser> {
  if (u.publicKey === undefined || u.jwt === undefined) {
    throw new MeshError(ErrorCode.INTERNAL, `${u.user} is not a signed user`);
  }
  const jwt = await accounts.issue({
    name: u.user,
    publicKey: u.publicKey,
    permissions: u.permissions,
    expiresAt,
  });
  return { ...u, jwt, expiresAt };
}

/** Where an issued credential points, and the one login of a bus the mesh does not own. */
export interface CredentialWhere {
  readonly vault: Vault;
  readonly servers: readonly string[];
  readonly fingerprint?: string;
  readonly ca?: string;
  readonly shared?: SharedLogin;
}

/**
 * The credential file's content for the issued user `u` (named `user`): its JWT and seed, opened
 * from the vault; its password in users-list mode; the shared login on a bus the mesh does not
 * own, under the principal's name and inbox.
 */
export function credentialOf(
  u: IssuedUser | undefined,
  user: string,
  options: CredentialWhere,
): Credential {
  if (u === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no bus user ${JSON.stringify(user)} is issued; it is made when the node's composition needs it`,
      { key: user },
    );
  }
  const { fingerprint, ca, servers, shared, vault } = options;
  const where = {
    servers: [...servers],
    ...(fingerprint === undefined ? {} : { fingerprint }),
    ...(ca === undefined ? {} : { ca }),
  };
  if (shared !== undefined) return { ...where, ...shared, node: u.node, module: u.module };
  const who = { user: u.user, node: u.node, module: u.module };
  if (u.seed !== undefined && u.jwt !== undefined) {
    return { ...where, ...who, jwt: u.jwt, seed: vault.open(u.seed, u.user).toString("utf8") };
  }
  if (u.password === undefined) {
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `the bus user ${JSON.stringify(user)} was issued for the mesh's accounts, and this bus runs a users list; restart the controller to issue it again`,
      { key: user },
    );
  }
  return { ...where, ...who, password: vault.open(u.password, u.user).toString("utf8") };
}
