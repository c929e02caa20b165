/**
 * The test harness in accounts mode (decision 0080): a real nats-server trusting a fresh
 * operator, with the mesh account (JetStream on) in its full resolver, an admin user signed with
 * every permission, and the authority that signs more users and revokes them, as the broker does.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ErrorCode, isMeshError, type Permissions } from "@mesh/protocol";
import { AccountAuthority, AccountFiles } from "../server/account-authority.js";
import {
  makeAccountKeys,
  newUserKey,
  serverAccounts,
  writeSecretJson,
  type AccountKeys,
} from "../server/accounts.js";
import { EmbeddedServer } from "../server/embedded-server.js";
import { FULL_PERMISSIONS } from "../server/server-config.js";
import { freePort, stopper } from "./harness.js";

/** A signed user as tests use it, with the public key a revocation names. */
export interface SignedLogin {
  readonly user: string;
  readonly jwt: string;
  readonly seed: string;
  readonly publicKey: string;
}

export interface AccountsTestServer extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly dir: string;
  readonly server: EmbeddedServer;
  readonly keys: AccountKeys;
  /** Where the keys and the revocations are kept (what `mesh up` keeps in `<root>/accounts`). */
  readonly keysPath: string;
  readonly revocationsPath: string;
  readonly authority: AccountAuthority;
  /** Signed with every permission, for setting up buckets and streams. */
  readonly admin: SignedLogin;
  /** Signs a user with `permissions`; nothing on the server changes. */
  issue(name: string, permissions: Permissions): Promise<SignedLogin>;
  stop(): Promise<void>;
}

export async function startAccountsTestServer(
  options: { readonly signal?: AbortSignal } = {},
): Promise<AccountsTestServer> {
  const { signal } = options;
  const dir = await mkdtemp(join(tmpdir(), "mesh-nats-acc-"));
  try {
    const keys = makeAccountKeys();
    const keysPath = join(dir, "accounts", AccountFiles.keys);
    const revocationsPath = join(dir, "accounts", AccountFiles.revocations);
    await writeSecretJson(keysPath, keys);
    let server: EmbeddedServer | undefined;
    for (let attempt = 1; server === undefined; attempt++) {
      const port = await freePort(signal === undefined ? {} : { signal });
      try {
        server = await EmbeddedServer.start({
          dir: join(dir, "bus"),
          port,
          accounts: await serverAccounts(keys, {}),
          serverName: "mesh-test",
          maxMemoryStore: 64 * 1024 * 1024,
          maxFileStore: 1024 * 1024 * 1024,
          startTimeoutMs: 15_000,
          ref: false,
          ...(signal === undefined ? {} : { signal }),
        });
      } catch (error) {
        const portTaken =
          isMeshError(error, ErrorCode.SERVER_START_FAILED) &&
          /address already in use/.test(error.message);
        if (!portTaken || attempt >= 3) throw error;
      }
    }
    const authority = await AccountAuthority.open({
      keysPath,
      revocationsPath,
      servers: [server.url],
    });
    const issue = async (name: string, permissions: Permissions): Promise<SignedLogin> => {
      const key = newUserKey();
      const jwt = await authority.issue({ name, publicKey: key.publicKey, permissions });
      return { user: name, jwt, seed: key.seed, publicKey: key.publicKey };
    };
    const admin = await issue("admin", FULL_PERMISSIONS);
    const stopServer = stopper(server, dir);
    // The authority keeps its system connection between updates: closed before the server goes.
    const stop = async (): Promise<void> => {
      await authority.close();
      await stopServer();
    };
    return {
      url: server.url,
      port: server.port,
      pid: server.pid,
      dir,
      server,
      keys,
      keysPath,
      revocationsPath,
      authority,
      admin,
      issue,
      stop,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
