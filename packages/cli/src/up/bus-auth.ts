/**
 * How the bus `mesh up` runs lets users in (decision 0080): the mesh's accounts (its operator,
 * the mesh account with JetStream, users signed by the account signing key; keys in
 * `<root>/accounts`, 0600) or a users list (bcrypt hashes, reloaded on each change). A new root
 * takes accounts unless `--auth users` is said; a root keeps the mode it began with, since the
 * bus keeps each account's streams apart and a switch would hide the mesh's data.
 */
import { join } from "node:path";
import { ErrorCode, MeshError, type Credential } from "@mesh/protocol";
import {
  AccountFiles,
  AuthMode,
  addRevocation,
  ensureAccountKeys,
  keepNextAccountJwt,
  readKeptAccountJwt,
  readRevocationList,
  readRevocations,
  serverAccounts,
  writeSecretJson,
  type ServerAccounts,
  type ServerUser,
} from "@mesh/bus/server";
import { serverUsersOnDisk } from "@mesh/controller";
import { ensurePrincipals, ensureSignedPrincipals, type PrincipalSpec } from "../principals.js";
import type { RootPaths } from "../mesh-root.js";

/** The mode for this run: the one asked for, else the root's, else accounts for a new root. */
export function chooseAuth(
  asked: AuthMode | undefined,
  previous: { readonly auth?: AuthMode | undefined } | undefined,
): AuthMode {
  // A root made before accounts mode ran a users list.
  const kept = previous === undefined ? undefined : (previous.auth ?? AuthMode.users);
  if (asked !== undefined && kept !== undefined && asked !== kept) {
    throw new MeshError(
      ErrorCode.USAGE,
      `this root's bus runs ${kept === AuthMode.accounts ? "the mesh's accounts" : "a users list"} (--auth ${kept}), and a root keeps its mode: the bus keeps the mesh's data in the account it began with. Leave out --auth ${asked}, or use a new --root`,
    );
  }
  return asked ?? kept ?? AuthMode.accounts;
}

export interface BusAuth {
  readonly credentials: ReadonlyMap<
    string,
    { readonly path: string; readonly credential: Credential }
  >;
  /** What EmbeddedServer.start takes, read afresh at every (re)start of the bus. */
  serverAuth(): Promise<{ readonly users: ServerUser[] } | { readonly accounts: ServerAccounts }>;
}

/** The principals' credentials for `auth`, and how the bus is told who may log in. */
export async function busAuth(
  paths: RootPaths,
  options: {
    readonly auth: AuthMode;
    readonly node: string;
    readonly servers: readonly string[];
    readonly principals: readonly PrincipalSpec[];
    /** The bus certificate every credential pins, when the bus speaks TLS. */
    readonly pin?: { readonly fingerprint: string; readonly ca: string };
  },
): Promise<BusAuth> {
  const controllerDir = join(paths.root, "controller");
  if (options.auth === AuthMode.users) {
    const ensured = await ensurePrincipals(paths, options);
    return {
      credentials: ensured.credentials,
      // The users on disk: mesh up's and every one the broker issued, so none is refused
      // while the controller catches up (issue 15).
      serverAuth: async () => ({ users: await serverUsersOnDisk(controllerDir, ensured.users) }),
    };
  }
  const dir = join(paths.root, "accounts");
  const keys = await ensureAccountKeys(join(dir, AccountFiles.keys));
  const revocationsPath = join(dir, AccountFiles.revocations);
  const signed = await ensureSignedPrincipals(paths, { ...options, keys });
  if (Object.keys(signed.revocations).length > 0) {
    const list = await readRevocationList(revocationsPath);
    for (const [key, at] of Object.entries(signed.revocations)) addRevocation(list, key, at);
    await writeSecretJson(revocationsPath, list);
  }
  // The mesh account's JWT as the revocations stand, issued after the last one and kept: every
  // (re)start of a server preloads the kept one, which the controller replaces before each push
  // (decision 0181), so a server started again refuses the revoked from its first second and
  // no JWT issued in the same second as another can undo it.
  const jwtPath = join(dir, AccountFiles.jwt);
  await keepNextAccountJwt(
    jwtPath,
    keys,
    await readRevocations(revocationsPath),
    (await readKeptAccountJwt(jwtPath, keys))?.issuedAt ?? 0,
  );
  return {
    credentials: signed.credentials,
    serverAuth: async () => {
      const revocations = await readRevocations(revocationsPath);
      const kept = await readKeptAccountJwt(jwtPath, keys);
      return { accounts: await serverAccounts(keys, revocations, kept?.jwt) };
    },
  };
}
