/**
 * The mesh's own bus users on this root: each principal's password (in its credential file,
 * 0600), its bcrypt hash and permissions (in the users list the bus is configured from). A
 * password is made once and kept; permissions are taken afresh from the code at every start,
 * so an upgrade that changes a grant applies on the next `mesh up`.
 */
import { z } from "zod";
import { ErrorCode, MeshError, Permissions, type Credential } from "@mesh/protocol";
import { readCredential, writeCredential } from "@mesh/bus";
import {
  hashPassword,
  issueUserJwt,
  isCurrentUserJwt,
  newUserKey,
  publicKeyOf,
  verifyPassword,
  type AccountKeys,
  type ServerUser,
} from "@mesh/bus/server";
import {
  credentialPath,
  randomPassword,
  readJson,
  writeJson,
  type RootPaths,
} from "./mesh-root.js";

/** One of the mesh's own principals as `mesh up` runs it. */
export interface PrincipalSpec {
  /** The credential's module part and file name: `controller`, `operator`, … */
  readonly principal: string;
  readonly permissions: Permissions;
}

const UsersFile = z.object({
  users: z.array(
    z
      .object({
        user: z.string(),
        principal: z.string(),
        passwordHash: z.string(),
        permissions: Permissions,
      })
      .strict(),
  ),
});
type UsersFile = z.infer<typeof UsersFile>;

export interface EnsuredPrincipals {
  readonly users: ServerUser[];
  readonly credentials: ReadonlyMap<
    string,
    { readonly path: string; readonly credential: Credential }
  >;
}

/** Which principals, on which node, for which bus. */
export interface PrincipalsOptions {
  node: string;
  servers: readonly string[];
  principals: readonly PrincipalSpec[];
  /** The bus certificate every credential pins, when the bus speaks TLS. */
  pin?: { readonly fingerprint: string; readonly ca: string };
}

/**
 * Makes sure every principal has a credential for `servers` and a matching entry in the users
 * list, creating what is missing, and returns the users list for the bus.
 */
export async function ensurePrincipals(
  paths: RootPaths,
  options: PrincipalsOptions,
): Promise<EnsuredPrincipals> {
  const stored = await readUsers(paths);
  const byPrincipal = new Map(stored.users.map((u) => [u.principal, u]));
  const users: ServerUser[] = [];
  const credentials = new Map<string, { path: string; credential: Credential }>();
  const kept: UsersFile["users"] = [];

  for (const spec of options.principals) {
    const path = credentialPath(paths, spec.principal);
    const user = `${options.node}.${spec.principal}`;
    let credential = await readKeptCredential(path);
    let entry = byPrincipal.get(spec.principal);
    if (credential?.password === undefined) credential = undefined;
    // A credential whose user moved (another node name) or whose password no longer matches the
    // kept hash is replaced: both halves are made again together.
    if (
      credential === undefined ||
      entry === undefined ||
      credential.user !== user ||
      entry.user !== user ||
      !(await verifyPassword(credential.password ?? "", entry.passwordHash))
    ) {
      const password = randomPassword();
      credential = {
        servers: [...options.servers],
        user,
        password,
        node: options.node,
        module: spec.principal,
        ...options.pin,
      };
      entry = {
        user,
        principal: spec.principal,
        passwordHash: await hashPassword(password),
        permissions: spec.permissions,
      };
      await writeCredential(path, credential);
    } else {
      credential = await repointed(path, credential, options);
    }
    entry = { ...entry, permissions: spec.permissions };
    kept.push(entry);
    users.push({
      user: entry.user,
      passwordHash: entry.passwordHash,
      permissions: entry.permissions,
    });
    credentials.set(spec.principal, { path, credential });
  }
  await writeJson(paths.users, { users: kept } satisfies UsersFile);
  return { users, credentials };
}

/** The credential kept at `path`; undefined when it is missing or damaged (made again). */
async function readKeptCredential(path: string): Promise<Credential | undefined> {
  return readCredential(path).catch((error: unknown) => {
    if (error instanceof MeshError && error.code === ErrorCode.CREDENTIAL_INVALID) return undefined;
    throw error;
  });
}

async function readUsers(paths: RootPaths): Promise<UsersFile> {
  const raw = await readJson(paths.users);
  if (raw === undefined) return { users: [] };
  const parsed = UsersFile.safeParse(raw);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${paths.users} is not a users list this mesh wrote (${parsed.error.issues[0]?.message ?? "bad shape"}); move it away and run \`mesh up\` again to issue new credentials`,
      { path: paths.users },
    );
  }
  return parsed.data;
}

/**
 * Accounts mode (decision 0080): each principal's credential holds an nkey seed and a JWT the
 * mesh account's signing key signed. A key is kept across runs while its permissions are the
 * code's; otherwise a new key is signed and the old one is revoked whole (returned, for the
 * account the bus starts with; decision 0091: the same key again had to wait for a later second).
 */
export async function ensureSignedPrincipals(
  paths: RootPaths,
  options: PrincipalsOptions & { keys: AccountKeys },
): Promise<{
  readonly credentials: EnsuredPrincipals["credentials"];
  readonly revocations: Record<string, number>;
}> {
  const credentials = new Map<string, { path: string; credential: Credential }>();
  const revocations: Record<string, number> = {};
  for (const spec of options.principals) {
    const path = credentialPath(paths, spec.principal);
    const user = `${options.node}.${spec.principal}`;
    let credential = await readKeptCredential(path);
    const ownKey =
      credential?.seed !== undefined && credential.user === user
        ? publicKeyOf(credential.seed)
        : undefined;
    const current =
      ownKey !== undefined &&
      credential?.jwt !== undefined &&
      isCurrentUserJwt(options.keys, credential.jwt, spec.permissions);
    if (credential === undefined || !current) {
      const { seed, publicKey } = newUserKey();
      const jwt = await issueUserJwt(options.keys, {
        name: user,
        publicKey,
        permissions: spec.permissions,
      });
      // No process of this run holds the old key yet: every JWT of it goes at once.
      if (ownKey !== undefined) revocations[ownKey] = Math.floor(Date.now() / 1000);
      credential = {
        servers: [...options.servers],
        user,
        jwt,
        seed,
        node: options.node,
        module: spec.principal,
        ...options.pin,
      };
      await writeCredential(path, credential);
    } else {
      credential = await repointed(path, credential, options);
    }
    credentials.set(spec.principal, { path, credential });
  }
  return { credentials, revocations };
}

/**
 * A kept credential pointed at where the bus is now: the servers and the certificate it is pinned
 * to may move, the login (a password or a signed user) stays. Written back only when it moved.
 */
async function repointed(
  path: string,
  credential: Credential,
  to: Pick<PrincipalsOptions, "servers" | "pin">,
): Promise<Credential> {
  if (
    credential.servers.join(",") === to.servers.join(",") &&
    credential.fingerprint === to.pin?.fingerprint &&
    credential.ca === to.pin?.ca
  )
    return credential;
  const { fingerprint: _fingerprint, ca: _ca, ...login } = credential;
  const moved = { ...login, servers: [...to.servers], ...to.pin };
  await writeCredential(path, moved);
  return moved;
}
