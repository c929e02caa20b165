/**
 * The authority over the mesh account in accounts mode (decision 0080): it signs user JWTs with
 * the account signing key, and takes users away by pushing the account JWT with their keys in
 * its revocations. The revocations are kept in a file beside the keys before they are pushed,
 * so a bus started again (mesh up signs the account from the same file) keeps them too.
 */
import type { Permissions } from "@mesh/protocol";
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import { MeshBus, natsOf } from "../mesh-bus.js";
import {
  SYSTEM_USER,
  issueUserJwt,
  meshAccountJwt,
  publicKeyOf,
  readAccountKeys,
  readRevocations,
  systemUser,
  writeSecretJson,
  type AccountKeys,
} from "./accounts.js";

/** Where accounts mode keeps its files, in `mesh up`'s root: `<root>/accounts/…`. */
export const AccountFiles = {
  keys: "keys.json",
  revocations: "revocations.json",
} as const;

export interface AccountAuthorityOptions {
  readonly keysPath: string;
  readonly revocationsPath: string;
  /** The bus the account updates go to. */
  readonly servers: readonly string[];
  readonly fingerprint?: string;
  readonly ca?: string;
  /** How long the server may take to answer an update; default 10 s. */
  readonly timeoutMs?: number;
}

export class AccountAuthority {
  readonly #options: AccountAuthorityOptions;
  readonly #keys: AccountKeys;
  readonly #revocations: Record<string, number>;
  /** How many account updates were pushed; a test checks a pass pushes at most one. */
  updatesPushed = 0;

  private constructor(
    options: AccountAuthorityOptions,
    keys: AccountKeys,
    revocations: Record<string, number>,
  ) {
    this.#options = options;
    this.#keys = keys;
    this.#revocations = revocations;
  }

  static async open(options: AccountAuthorityOptions): Promise<AccountAuthority> {
    const keys = await readAccountKeys(options.keysPath);
    if (keys === undefined) {
      throw new MeshError(
        ErrorCode.CREDENTIAL_INVALID,
        `there are no account keys at ${options.keysPath}; the bus runs in accounts mode only once mesh up has made them — start the mesh with mesh up`,
        { path: options.keysPath },
      );
    }
    return new AccountAuthority(options, keys, await readRevocations(options.revocationsPath));
  }

  /** The mesh account's public key. */
  get account(): string {
    return publicKeyOf(this.#keys.account);
  }

  /** Signs a user JWT for `publicKey` with the account signing key; the server is not asked. */
  issue(user: {
    readonly name: string;
    readonly publicKey: string;
    readonly permissions: Permissions;
    readonly expiresAt?: string;
  }): Promise<string> {
    return issueUserJwt(this.#keys, user);
  }

  /** Whether `publicKey`'s JWTs issued at `issuedAt` (unix seconds) are revoked. */
  isRevoked(publicKey: string, issuedAt: number): boolean {
    const at = this.#revocations[publicKey];
    return at !== undefined && issuedAt <= at;
  }

  /**
   * Revokes every JWT of each key issued at or before its second, keeps the list, and pushes
   * the account JWT with it to the bus. Resolves once the server says it took it.
   */
  async revoke(
    entries: Readonly<Record<string, number>>,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<void> {
    if (Object.keys(entries).length === 0) return;
    for (const [key, at] of Object.entries(entries)) {
      this.#revocations[key] = Math.max(at, this.#revocations[key] ?? 0);
    }
    await writeSecretJson(this.#options.revocationsPath, { revocations: this.#revocations });
    await this.push(options);
  }

  /** Pushes the account JWT as the revocations stand now. */
  async push(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    const jwt = await meshAccountJwt(this.#keys, this.#revocations);
    await pushAccountJwt({
      ...this.#options,
      keys: this.#keys,
      jwt,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    this.updatesPushed += 1;
  }
}

/**
 * Sends an account JWT on `$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE` as a system user and waits
 * for the server's verdict (`{"data":{"code":200,…}}`, or `{"error":{…}}`).
 */
export async function pushAccountJwt(options: {
  readonly servers: readonly string[];
  readonly keys: AccountKeys;
  readonly jwt: string;
  readonly fingerprint?: string;
  readonly ca?: string;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}): Promise<void> {
  const account = publicKeyOf(options.keys.account);
  const system = await systemUser(options.keys);
  const subject = `$SYS.REQ.ACCOUNT.${account}.CLAIMS.UPDATE`;
  const bus = await MeshBus.connect(
    {
      servers: [...options.servers],
      user: "mesh-system",
      jwt: system.jwt,
      seed: system.seed,
      ...SYSTEM_USER,
      ...(options.fingerprint === undefined ? {} : { fingerprint: options.fingerprint }),
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    },
    {
      name: "mesh-account-update",
      timeoutMs: options.timeoutMs ?? 10_000,
      say: () => undefined,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    },
  ).catch((error: unknown) => {
    if (isMeshError(error, ErrorCode.ABORTED)) throw error;
    throw new MeshError(
      ErrorCode.ACCOUNT_UPDATE_FAILED,
      `could not reach the bus to update the mesh account (${(error as Error).message}); revoked credentials connect until it takes the update — is the bus running?`,
      { cause: error },
    );
  });
  let answer: string;
  try {
    const reply = await natsOf(bus).nc.request(subject, new TextEncoder().encode(options.jwt), {
      timeout: options.timeoutMs ?? 10_000,
    });
    answer = reply.string();
  } catch (error) {
    throw new MeshError(
      ErrorCode.ACCOUNT_UPDATE_FAILED,
      `the bus did not answer the mesh account's update on ${subject} (${(error as Error).message}); revoked credentials connect until it does — check that the bus runs with the mesh's operator`,
      { cause: error },
    );
  } finally {
    await bus.close().catch(() => undefined);
  }
  const verdict = parseVerdict(answer);
  if (verdict.code !== 200) {
    throw new MeshError(
      ErrorCode.ACCOUNT_UPDATE_FAILED,
      `the bus refused the mesh account's update: ${verdict.message}; revoked credentials connect until it takes one`,
    );
  }
}

function parseVerdict(answer: string): { code: number; message: string } {
  try {
    const value = JSON.parse(answer) as {
      data?: { code?: number; message?: string };
      error?: { code?: number; description?: string };
    };
    if (value.error !== undefined) {
      return { code: value.error.code ?? 500, message: value.error.description ?? answer };
    }
    return { code: value.data?.code ?? 500, message: value.data?.message ?? answer };
  } catch {
    return { code: 500, message: answer };
  }
}
