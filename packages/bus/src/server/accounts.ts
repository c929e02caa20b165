/**
 * Accounts mode (decision 0080): NATS decentralized auth for a bus the mesh owns. The mesh holds
 * four nkeys: an operator, the system account, the mesh account and the mesh account's signing
 * key. The server trusts the operator and keeps the accounts in its full resolver; every user is
 * a JWT signed by the account signing key, so issuing one changes nothing on the server. Taking
 * one away is an account update: the account JWT with the user's key in its revocations, pushed
 * on `$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE`. Nothing is reloaded.
 *
 * What nats-server 2.9.10 does with these was checked against it (see accounts.test.ts): a full
 * resolver with `resolver_preload`, JetStream enabled by the account's limits, a revocation
 * closing the user's live connections at once and refusing new ones.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import {
  decode,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  type User,
} from "@nats-io/jwt";
import { createFileOnce, writeFileAtomic } from "@mesh/kit";
import { KeyRole, newKey, nodeKeyPair, type SigningKeyPair } from "./nkey-codec.js";
import { z } from "zod";
import { ErrorCode, MeshError, inboxPrefix, type Permissions } from "@mesh/protocol";
import type { Revocations } from "./revocations.js";

export type { Revocations } from "./revocations.js";

/** The mesh's nkey seeds (`SO…`, `SA…`); whoever holds them can issue any user. */
export const AccountKeys = z
  .object({
    version: z.literal(1),
    operator: z.string().regex(/^SO[A-Z2-7]{56}$/),
    systemAccount: z.string().regex(/^SA[A-Z2-7]{56}$/),
    account: z.string().regex(/^SA[A-Z2-7]{56}$/),
    signingKey: z.string().regex(/^SA[A-Z2-7]{56}$/),
  })
  .strict();
export type AccountKeys = z.infer<typeof AccountKeys>;

/** What the server's config needs in accounts mode. */
export interface ServerAccounts {
  readonly operatorJwt: string;
  readonly systemAccount: string;
  /** Account public key → account JWT, stored by the resolver when newer than what it holds. */
  readonly preload: Readonly<Record<string, string>>;
}

export const MESH_ACCOUNT_NAME = "mesh";

/** No limit on anything the server counts, JetStream enabled without a cap. */
const UNLIMITED = {
  subs: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  conn: -1,
  leaf: -1,
  wildcards: true,
} as const;
const JETSTREAM = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 } as const;

export function makeAccountKeys(): AccountKeys {
  return {
    version: 1,
    operator: newKey(KeyRole.operator).seed,
    systemAccount: newKey(KeyRole.account).seed,
    account: newKey(KeyRole.account).seed,
    signingKey: newKey(KeyRole.account).seed,
  };
}

/** Key pairs by seed: deriving one takes a key import, signing with it none. */
const keyPairs = new Map<string, SigningKeyPair>();
function keyPair(seed: string): SigningKeyPair {
  let kp = keyPairs.get(seed);
  if (kp === undefined) {
    kp = nodeKeyPair(seed);
    keyPairs.set(seed, kp);
  }
  return kp;
}

/** The public key of a seed (`O…`, `A…`, `U…`). */
export const publicKeyOf = (seed: string): string => keyPair(seed).getPublicKey();

/** A new user nkey. */
export function newUserKey(): { readonly publicKey: string; readonly seed: string } {
  return newKey(KeyRole.user);
}

/**
 * The mesh account's JWT with `revocations`, signed by the operator: issued now, or at the second
 * `issuedAt` (unix seconds) when given — the account authority issues each a second after the
 * last (account-jwt.ts).
 */
export async function meshAccountJwt(
  keys: AccountKeys,
  revocations: Revocations,
  issuedAt?: number,
): Promise<string> {
  const operator = keyPair(keys.operator);
  const jwt = await encodeAccount(
    MESH_ACCOUNT_NAME,
    keyPair(keys.account),
    {
      signing_keys: [publicKeyOf(keys.signingKey)],
      limits: { ...UNLIMITED, ...JETSTREAM },
      ...(Object.keys(revocations).length === 0 ? {} : { revocations: { ...revocations } }),
    },
    { signer: operator },
  );
  return issuedAt === undefined || issuedAt === jwtIssuedAt(jwt)
    ? jwt
    : reissued(jwt, issuedAt, operator);
}

/**
 * `jwt` with its `iat` set to `issuedAt` and signed again by `signer`. The JWT library always
 * stamps the clock's second; the claims are otherwise its own, in its order, and the `jti` is
 * made as it makes it (the SHA-512 of the claims without it, in base64).
 */
function reissued(jwt: string, issuedAt: number, signer: SigningKeyPair): string {
  const [header = "", body = ""] = jwt.split(".");
  const claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Record<
    string,
    unknown
  >;
  delete claims.jti;
  claims.iat = issuedAt;
  claims.jti = createHash("sha512").update(JSON.stringify(claims)).digest("base64");
  const signed = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
  const signature = Buffer.from(signer.sign(new TextEncoder().encode(signed))).toString(
    "base64url",
  );
  return `${signed}.${signature}`;
}

/**
 * The operator JWT, the system account and the account JWTs the server starts with. The mesh
 * account's is `kept` when given (the newest the account authority issued, account-jwt.ts), else
 * one signed now with `revocations`.
 */
export async function serverAccounts(
  keys: AccountKeys,
  revocations: Revocations,
  kept?: string,
): Promise<ServerAccounts> {
  const operator = keyPair(keys.operator);
  const system = publicKeyOf(keys.systemAccount);
  const systemJwt = await encodeAccount(
    "system",
    keyPair(keys.systemAccount),
    { limits: UNLIMITED },
    { signer: operator },
  );
  return {
    operatorJwt: await encodeOperator("mesh", operator, { system_account: system }),
    systemAccount: system,
    preload: {
      [system]: systemJwt,
      [publicKeyOf(keys.account)]: kept ?? (await meshAccountJwt(keys, revocations)),
    },
  };
}

/**
 * The user JWT's permissions for `permissions`, as the users list would hold them: a side with
 * nothing allowed is `deny: [">"]` (an empty allow list allows everything, for JWTs as for the
 * config file); `allowResponses` is the JWT's `resp` (max 1 and the server's 2 minutes when
 * `true`).
 */
export function userPermissionClaims(permissions: Permissions): Partial<User> {
  const side = (s: Permissions["publish"]) => {
    const allow = s.allow ?? [];
    const deny = s.deny ?? [];
    if (allow.length === 0) return { deny: [">"] };
    return deny.length === 0 ? { allow: [...allow] } : { allow: [...allow], deny: [...deny] };
  };
  const claims: Partial<User> = {
    pub: side(permissions.publish),
    sub: side(permissions.subscribe),
  };
  const responses = permissions.allowResponses;
  if (responses === true) claims.resp = { max: 1, ttl: 0 };
  if (typeof responses === "object") {
    // The JWT's ttl is a Go duration: nanoseconds.
    claims.resp = { max: responses.max, ttl: (responses.expiresMs ?? 0) * 1_000_000 };
  }
  return claims;
}

/** A user JWT for `publicKey`, signed by the mesh account's signing key. */
export function issueUserJwt(
  keys: AccountKeys,
  user: {
    readonly name: string;
    readonly publicKey: string;
    readonly permissions: Permissions;
    /** When the JWT stops working (join users). */
    readonly expiresAt?: string;
  },
): Promise<string> {
  const exp = user.expiresAt === undefined ? undefined : Date.parse(user.expiresAt) / 1000;
  return encodeUser(
    user.name,
    fromPublicUser(user.publicKey),
    keyPair(keys.account),
    userPermissionClaims(user.permissions),
    {
      signer: keyPair(keys.signingKey),
      ...(exp === undefined ? {} : { exp: Math.floor(exp) }),
    },
  );
}

function fromPublicUser(publicKey: string) {
  if (!/^U[A-Z2-7]{55}$/.test(publicKey)) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${JSON.stringify(publicKey)} is not a user public key (U and 55 base32 letters)`,
    );
  }
  // encodeUser only reads the public key of the user's key pair.
  return { getPublicKey: () => publicKey } as unknown as SigningKeyPair;
}

/** Who the system user speaks as (its inbox prefix). */
export const SYSTEM_USER = { node: "mesh", module: "system" } as const;

/** A user of the system account, for pushing account updates; signed by the system account. */
export async function systemUser(
  keys: AccountKeys,
): Promise<{ readonly jwt: string; readonly seed: string }> {
  const user = newUserKey();
  const jwt = await encodeUser("mesh-system", keyPair(user.seed), keyPair(keys.systemAccount), {
    pub: { allow: ["$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE"] },
    sub: { allow: [`${inboxPrefix(SYSTEM_USER.node, SYSTEM_USER.module)}.>`] },
  });
  return { jwt, seed: user.seed };
}

/** Reads the mesh's keys; undefined when the file does not exist. */
export async function readAccountKeys(path: string): Promise<AccountKeys | undefined> {
  const raw = await readJsonIfThere(path);
  if (raw === undefined) return undefined;
  const parsed = AccountKeys.safeParse(raw);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `${path} is not the mesh's account keys (${parsed.error.issues[0]?.message ?? "bad shape"}); restore it from a backup — without it no credential of this mesh can be issued or revoked`,
      { path },
    );
  }
  return parsed.data;
}

/** Writes a JSON file with mode 0600, atomically (the kit's write: fsynced file and folder). */
export async function writeSecretJson(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}

/** The keys in `path`, made and kept there (0600) when the file does not exist yet. */
export async function ensureAccountKeys(path: string): Promise<AccountKeys> {
  const kept = await readAccountKeys(path);
  if (kept !== undefined) return kept;
  const made = makeAccountKeys();
  // Made once: of two processes making the keys at once, the second reads the first's.
  if (await createFileOnce(path, `${JSON.stringify(made, null, 2)}\n`, { mode: 0o600 }))
    return made;
  return ensureAccountKeys(path);
}

async function readJsonIfThere(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** The second a JWT was signed at (its `iat`); its signature is not checked. */
export function jwtIssuedAt(jwt: string): number {
  const body = jwt.split(".")[1] ?? "";
  const iat = (JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as { iat?: unknown })
    .iat;
  if (typeof iat !== "number") {
    throw new MeshError(ErrorCode.INVALID_VALUE, "a JWT without its issue time (iat)");
  }
  return iat;
}

/**
 * Whether `jwt` is a user JWT this mesh's signing key signed with exactly `permissions` (what
 * `mesh up` checks before signing its own principals again).
 */
export function isCurrentUserJwt(
  keys: AccountKeys,
  jwt: string,
  permissions: Permissions,
): boolean {
  try {
    const claims = decode<User>(jwt);
    const want = userPermissionClaims(permissions);
    const nats = claims.nats;
    return (
      claims.iss === publicKeyOf(keys.signingKey) &&
      JSON.stringify([nats.pub, nats.sub, nats.resp]) ===
        JSON.stringify([want.pub, want.sub, want.resp])
    );
  } catch {
    return false;
  }
}

/** A `.creds` file's text (what `nsc` writes and the `nats` CLI reads): the JWT and the seed. */
export function formatCreds(jwt: string, seed: string): string {
  return new TextDecoder().decode(fmtCreds(jwt, keyPair(seed)));
}
