/**
 * The mesh account's revocations as kept in `<root>/accounts/revocations.json` (decision 0080):
 * for each revoked user key, the second up to which its JWTs are revoked, and — when every JWT
 * the revocation covers carries an expiry — the second the last of them expires. A revocation
 * stops mattering once that has passed (the server refuses an expired JWT and closes its
 * connection at the expiry), so it is pruned then, with a margin for the servers' clocks:
 * without it the account JWT would grow by ~70 bytes with every join for good.
 *
 * Revocations recorded between two updates are appended to a journal beside the list
 * (`revocations.json.journal`, one JSON line each, synced), and the update writes the list whole
 * and drops the journal: rewriting the whole list at every commit that revoked something cost
 * each pass of the controller the size of every revocation kept (issue 13).
 */
import { readFile, rm } from "node:fs/promises";
import { z } from "zod";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { appendDurably } from "@mesh/kit";

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

const JournalLine = z
  .object({ key: z.string().min(1), at: z.number().int(), expiresAt: z.number().int().optional() })
  .strict();

/** Where the revocations recorded since the list at `path` was written are appended. */
export const journalOf = (path: string): string => `${path}.journal`;

/** The text of `path`, or undefined when there is no such file. */
async function readIfThere(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** The list kept in `path` with its journal applied; an empty one when there is no file yet. */
export async function readRevocationList(path: string): Promise<RevocationList> {
  const text = await readIfThere(path);
  const list = text === undefined ? { revocations: {}, expires: {} } : parseList(path, text);
  const journal = await readIfThere(journalOf(path));
  if (journal !== undefined) applyJournal(list, journalOf(path), journal);
  return list;
}

/**
 * Appends revocations to the journal beside `path` and syncs it: on disk when this resolves.
 * `expires` as for {@link addRevocation}, by key.
 */
export async function appendRevocations(
  path: string,
  entries: Readonly<Record<string, number>>,
  expires: Readonly<Record<string, number>> = {},
): Promise<void> {
  const lines = Object.entries(entries).map(([key, at]) => {
    const expiresAt = expires[key];
    return `${JSON.stringify(expiresAt === undefined ? { key, at } : { key, at, expiresAt })}\n`;
  });
  if (lines.length === 0) return;
  await appendDurably(journalOf(path), lines.join(""));
}

/** Whether revocations were appended beside `path` since the list was last written whole. */
export async function hasJournal(path: string): Promise<boolean> {
  return (await readIfThere(journalOf(path))) !== undefined;
}

/** Drops the journal beside `path` (its lines are in the list written whole). */
export async function dropJournal(path: string): Promise<void> {
  await rm(journalOf(path), { force: true });
}

/**
 * Applies each journal line in order. A crash mid-append leaves at most a torn last line: its
 * revocation was never acknowledged, so it is dropped; any other bad line refuses the file.
 */
function applyJournal(list: RevocationList, path: string, text: string): void {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  lines.forEach((line, i) => {
    let parsed: z.infer<typeof JournalLine> | undefined;
    try {
      parsed = JournalLine.parse(JSON.parse(line));
    } catch {
      if (i === lines.length - 1) return;
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `${path} line ${i + 1} is not a revocation the controller wrote; restore the folder from a backup`,
        { path },
      );
    }
    addRevocation(list, parsed.key, parsed.at, parsed.expiresAt);
  });
}

function parseList(path: string, text: string): RevocationList {
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
