/**
 * The authority over the mesh account in accounts mode (decision 0080): it signs user JWTs with
 * the account signing key, and takes users away by pushing the account JWT with their keys in
 * its revocations. The revocations are kept in a file beside the keys before they are pushed,
 * and so is the account JWT itself, each issued a second after the last (account-jwt.ts), so a
 * bus started again (mesh up preloads the kept JWT) keeps them too.
 */
import { dirname, join } from "node:path";
import type { Permissions } from "@mesh/protocol";
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import { MeshBus, natsOf } from "../mesh-bus.js";
import {
  SYSTEM_USER,
  issueUserJwt,
  publicKeyOf,
  readAccountKeys,
  systemUser,
  writeSecretJson,
  type AccountKeys,
} from "./accounts.js";
import {
  REVOCATION_PRUNE_MARGIN_S,
  addRevocation,
  appendRevocations,
  dropJournal,
  hasJournal,
  pruneRevocations,
  readRevocationList,
  type RevocationList,
} from "./revocations.js";
import { keepNextAccountJwt, readKeptAccountJwt } from "./account-jwt.js";

/** Where accounts mode keeps its files, in `mesh up`'s root: `<root>/accounts/…`. */
export const AccountFiles = {
  keys: "keys.json",
  revocations: "revocations.json",
  /** The newest mesh account JWT, written before it is pushed (account-jwt.ts). */
  jwt: "account.jwt",
} as const;

export interface AccountAuthorityOptions {
  readonly keysPath: string;
  readonly revocationsPath: string;
  /** Where the newest account JWT is kept; `account.jwt` beside the revocations by default. */
  readonly accountJwtPath?: string;
  /** The bus the account updates go to. */
  readonly servers: readonly string[];
  readonly fingerprint?: string;
  readonly ca?: string;
  /** How long the server may take to answer an update; default 10 s. */
  readonly timeoutMs?: number;
  /** How long past its last expiry a revocation is kept ({@link REVOCATION_PRUNE_MARGIN_S}). */
  readonly pruneMarginS?: number;
}

export class AccountAuthority {
  readonly #options: AccountAuthorityOptions;
  readonly #keys: AccountKeys;
  readonly #revocations: RevocationList;
  /** The system user's connection the updates go on, kept between them; made when first needed. */
  #system: Promise<MeshBus> | undefined;
  /** The kept list's file work, one at a time (an append must not fall between a write and a drop). */
  #files: Promise<unknown> = Promise.resolve();
  /** Revocations were appended to the journal since the list was last written whole. */
  #journaled = false;
  /** The second the last account JWT was issued at: the next is issued after it. */
  #issuedAt: number;
  /** How many account updates were pushed; a test checks a pass pushes at most one. */
  updatesPushed = 0;

  private constructor(
    options: AccountAuthorityOptions,
    keys: AccountKeys,
    revocations: RevocationList,
    issuedAt: number,
  ) {
    this.#options = options;
    this.#keys = keys;
    this.#revocations = revocations;
    this.#issuedAt = issuedAt;
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
    // Its first JWT is issued after the kept one and after this second: a JWT the servers were
    // started with, signed before now, is older than anything this authority pushes.
    const kept = await readKeptAccountJwt(jwtPathOf(options), keys);
    const authority = new AccountAuthority(
      options,
      keys,
      await readRevocationList(options.revocationsPath),
      Math.max(kept?.issuedAt ?? 0, Math.floor(Date.now() / 1000)),
    );
    // The journal folded in at once: a torn last line must not have lines appended after it.
    authority.#journaled = await hasJournal(options.revocationsPath);
    await authority.#writeList();
    return authority;
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
    const at = this.#revocations.revocations[publicKey];
    return at !== undefined && issuedAt <= at;
  }

  /** The revocations the account JWT carries now. */
  get revocations(): Readonly<Record<string, number>> {
    return { ...this.#revocations.revocations };
  }

  /**
   * Revokes every JWT of each key issued at or before its second, drops the revocations that
   * no longer matter, keeps the list, and pushes the account JWT with it to the bus. Resolves
   * once the server says it took it. `expires`: for keys whose JWTs all carry an expiry, the
   * last of them (unix seconds); the revocation is pruned some time after it.
   */
  async revoke(
    entries: Readonly<Record<string, number>>,
    options: {
      readonly signal?: AbortSignal;
      readonly expires?: Readonly<Record<string, number>>;
    } = {},
  ): Promise<void> {
    if (Object.keys(entries).length === 0) return;
    await this.record(entries, options);
    await this.push(options.signal === undefined ? {} : { signal: options.signal });
  }

  /**
   * Adds revocations to the kept list without pushing it: the next update (or the push a
   * controller makes at its start) carries them. They are on disk when this resolves, appended
   * to the list's journal: the cost of what is revoked, not of every revocation kept.
   */
  record(
    entries: Readonly<Record<string, number>>,
    options: { readonly expires?: Readonly<Record<string, number>> } = {},
  ): Promise<void> {
    return this.#filed(async () => {
      for (const [key, at] of Object.entries(entries)) {
        addRevocation(this.#revocations, key, at, options.expires?.[key]);
      }
      await appendRevocations(this.#options.revocationsPath, entries, options.expires);
      this.#journaled ||= Object.keys(entries).length > 0;
    });
  }

  /** Prunes the list and, when it moved since, writes it whole and drops the journal. */
  #writeList(): Promise<void> {
    return this.#filed(async () => {
      const pruned = pruneRevocations(
        this.#revocations,
        Math.floor(Date.now() / 1000),
        this.#options.pruneMarginS ?? REVOCATION_PRUNE_MARGIN_S,
      );
      if (!this.#journaled && pruned === 0) return;
      await writeSecretJson(this.#options.revocationsPath, this.#revocations);
      await dropJournal(this.#options.revocationsPath);
      this.#journaled = false;
    });
  }

  #filed<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#files.then(fn);
    this.#files = run.catch(() => undefined);
    return run;
  }

  /**
   * Pushes the account JWT as the revocations stand now, on the system user's connection (kept:
   * a connection per update cost a login, an nkey signature in pure JavaScript, each time).
   */
  async push(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    if (options.signal?.aborted === true) {
      throw new MeshError(ErrorCode.ABORTED, "the mesh account's update was aborted", {
        cause: options.signal.reason,
      });
    }
    // Written whole once per update (pruned), not at every record.
    await this.#writeList();
    // Issued and kept one at a time, each after the last, before it leaves.
    const jwt = await this.#filed(async () => {
      const next = await keepNextAccountJwt(
        jwtPathOf(this.#options),
        this.#keys,
        this.#revocations.revocations,
        this.#issuedAt,
      );
      this.#issuedAt = next.issuedAt;
      return next.jwt;
    });
    // Kept past this call, so not bound to its signal; connecting gives up after the timeout.
    this.#system ??= connectSystemUser({ ...this.#options, keys: this.#keys });
    const system = this.#system;
    try {
      await requestUpdate(await system, this.#keys, jwt, this.#options.timeoutMs);
    } catch (error) {
      // The next update connects again: this connection may be what failed.
      if (this.#system === system) this.#system = undefined;
      void system.then((bus) => bus.close()).catch(() => undefined);
      throw error;
    }
    this.updatesPushed += 1;
  }

  /** Closes the system user's connection; closing twice is harmless. */
  async close(): Promise<void> {
    const system = this.#system;
    this.#system = undefined;
    await system?.then((bus) => bus.close()).catch(() => undefined);
  }
}

function jwtPathOf(options: AccountAuthorityOptions): string {
  return options.accountJwtPath ?? join(dirname(options.revocationsPath), AccountFiles.jwt);
}

interface UpdateTarget {
  readonly servers: readonly string[];
  readonly keys: AccountKeys;
  readonly fingerprint?: string;
  readonly ca?: string;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Sends an account JWT on `$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE` as a system user and waits
 * for the server's verdict (`{"data":{"code":200,…}}`, or `{"error":{…}}`).
 */
export async function pushAccountJwt(
  options: UpdateTarget & { readonly jwt: string },
): Promise<void> {
  const bus = await connectSystemUser(options);
  try {
    await requestUpdate(bus, options.keys, options.jwt, options.timeoutMs);
  } finally {
    await bus.close().catch(() => undefined);
  }
}

/** A connection as a system-account user that may send account updates. */
async function connectSystemUser(options: UpdateTarget): Promise<MeshBus> {
  const system = await systemUser(options.keys);
  return MeshBus.connect(
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
}

/**
 * Sends `jwt` on `$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE` and waits for the server's verdict
 * (`{"data":{"code":200,…}}`, or `{"error":{…}}`).
 */
async function requestUpdate(
  bus: MeshBus,
  keys: AccountKeys,
  jwt: string,
  timeoutMs = 10_000,
): Promise<void> {
  const subject = `$SYS.REQ.ACCOUNT.${publicKeyOf(keys.account)}.CLAIMS.UPDATE`;
  let answer: string;
  try {
    const reply = await natsOf(bus).nc.request(subject, new TextEncoder().encode(jwt), {
      timeout: timeoutMs,
    });
    answer = reply.string();
  } catch (error) {
    throw new MeshError(
      ErrorCode.ACCOUNT_UPDATE_FAILED,
      `the bus did not answer the mesh account's update on ${subject} (${(error as Error).message}); revoked credentials connect until it does — check that the bus runs with the mesh's operator`,
      { cause: error },
    );
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
