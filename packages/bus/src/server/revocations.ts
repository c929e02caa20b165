/**
 * The mesh account's revocations as kept in `<root>/accounts/revocations.json` (decision 0080):
 * for each revoked user key, the second up to which its JWTs are revoked, and — when every JWT
 * the revocation covers carries an expiry — the second the last of them expires. A revocation
 * stops mattering once that has passed (the server refuses an expired JWT and closes its
 * connection at the expiry), so it is pruned then, with a margin for the servers' clocks:
 * without it the account JWT would grow by ~70 bytes with every join for good.
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { ErrorCode, MeshError } from "@mesh/protocol";

/** Revoked user keys: a user JWT issued at or before the second given no longer connects. */
export type Revocations = Readonly<Record<string, number>>;

export interface RevocationList {
  /** Key → the second up to which its JWTs are revoked (what the account JWT carries). */
  readonly revocations: Record<string, number>;
  /** Key → when every JWT its revocation covers has expired; a key absent never expires. */
  readonly expires: Record<string, number>;
}

/**
 * How long past its last expiry a revocation is kept: a server whose clock runs behind the
 * controller's still holds an expired JWT good for that long.
 */
export const REVOCATION_PRUNE_MARGIN_S = 600;

const RevocationFile = z.object({
  revocations: z.record(z.string(), z.number().int()),
  expires: z.record(z.string(), z.number().int()).optional(),
});

/** The list kept in `path`; an empty one when there is no file yet. */
export async function readRevocationList(path: string): Promise<RevocationList> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { revocations: {}, expires: {} };
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    raw = null;
  }
  const parsed = RevocationFile.safeParse(raw);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${path} is not the revocations file the controller writes; restore it from a backup`,
      { path },
    );
  }
  return { revocations: parsed.data.revocations, expires: parsed.data.expires ?? {} };
}

/** The revocations in `path` that can still matter now (what `mesh up` signs the account with). */
export async function readRevocations(path: string): Promise<Record<string, number>> {
  const list = await readRevocationList(path);
  pruneRevocations(list, Math.floor(Date.now() / 1000));
  return list.revocations;
}

/**
 * Revokes `key`'s JWTs up to `at`. `expiresAt`: when the last of the JWTs this covers expires
 * (unix seconds); absent, some never does, and the revocation is kept for good.
 */
export function addRevocation(
  list: RevocationList,
  key: string,
  at: number,
  expiresAt?: number,
): void {
  const had = key in list.revocations;
  list.revocations[key] = Math.max(at, list.revocations[key] ?? 0);
  if (expiresAt === undefined) delete list.expires[key];
  else if (!had || key in list.expires) {
    list.expires[key] = Math.max(expiresAt, list.expires[key] ?? 0);
  }
}

/**
 * Drops the revocations whose every JWT expired more than `marginS` before `nowS`; returns how
 * many went.
 */
export function pruneRevocations(
  list: RevocationList,
  nowS: number,
  marginS: number = REVOCATION_PRUNE_MARGIN_S,
): number {
  let pruned = 0;
  for (const [key, expiresAt] of Object.entries(list.expires)) {
    if (expiresAt + marginS >= nowS) continue;
    delete list.revocations[key];
    delete list.expires[key];
    pruned += 1;
  }
  return pruned;
}
