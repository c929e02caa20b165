/**
 * Accounts mode: the account updates that carry revocations, pushed beside the controller's
 * passes instead of inside them (issue 13). A pass needs no update: a new user's JWT works at
 * once, and the users file is kept before any credential leaves. Awaiting the update in the pass
 * made every pass as slow as the update, and at 1,000 nodes an update took ~1 s on this machine
 * (the server checks each connection of the account against the list), so passes and join-token
 * asks grew with the fleet. Here revocations staged while one update is out go together in the
 * next; an update the bus does not take is tried again 1 s later, doubling up to 30 s.
 */
import { setTimeout as delay } from "node:timers/promises";
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import type { AccountAuthority } from "@mesh/bus";

/** A revocation waiting for the next update: up to which second, and when the JWTs expire. */
export interface StagedRevocation {
  readonly at: number;
  readonly expiresAt?: number;
}

/** `r` on top of `had`: the later second, and an expiry only while every one has one. */
export function mergeRevocation(
  had: StagedRevocation | undefined,
  r: StagedRevocation,
): StagedRevocation {
  const at = Math.max(r.at, had?.at ?? 0);
  const expiresAt =
    r.expiresAt === undefined || (had !== undefined && had.expiresAt === undefined)
      ? undefined
      : Math.max(r.expiresAt, had?.expiresAt ?? 0);
  return expiresAt === undefined ? { at } : { at, expiresAt };
}

/** Staged revocations as the account authority takes them: seconds, and expiries by key. */
export function revocationEntries(
  staged: ReadonlyMap<string, StagedRevocation>,
): [Record<string, number>, { expires: Record<string, number> }] {
  const revocations: Record<string, number> = {};
  const expires: Record<string, number> = {};
  for (const [key, r] of staged) {
    revocations[key] = r.at;
    if (r.expiresAt !== undefined) expires[key] = r.expiresAt;
  }
  return [revocations, { expires }];
}

/** The longest wait before an update the bus did not take is pushed again. */
export const UPDATE_RETRY_MAX_MS = 30_000;

export interface RevocationPusherOptions {
  readonly accounts: AccountAuthority;
  /** Told each update the bus took: how many keys it revoked, and how long it took. */
  readonly onPushed?: (revoked: number, ms: number) => void;
  /** Told each update the bus did not take, and when it is tried again. */
  readonly onDeferred?: (error: MeshError, retryInMs: number) => void;
}

export class RevocationPusher {
  readonly #options: RevocationPusherOptions;
  readonly #staged = new Map<string, StagedRevocation>();
  #running: Promise<void> | undefined;
  #retryMs = 0;

  constructor(options: RevocationPusherOptions) {
    this.#options = options;
  }

  /** Stages `revocations` and starts an update unless one is out (the next takes them). */
  add(revocations: ReadonlyMap<string, StagedRevocation>): void {
    for (const [key, r] of revocations)
      this.#staged.set(key, mergeRevocation(this.#staged.get(key), r));
    this.#running ??= this.#run().finally(() => (this.#running = undefined));
  }

  /** Whether revocations wait for an update. */
  get pending(): boolean {
    return this.#staged.size > 0;
  }

  /** Resolves once nothing staged waits (an update the bus refuses keeps it waiting). */
  async settled(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #run(): Promise<void> {
    while (this.#staged.size > 0) {
      const batch = new Map(this.#staged);
      this.#staged.clear();
      const [revocations, expiry] = revocationEntries(batch);
      const started = performance.now();
      try {
        await this.#options.accounts.revoke(revocations, expiry);
        this.#retryMs = 0;
        this.#options.onPushed?.(batch.size, Math.round(performance.now() - started));
      } catch (error) {
        for (const [key, r] of batch)
          this.#staged.set(key, mergeRevocation(this.#staged.get(key), r));
        this.#retryMs = Math.min(UPDATE_RETRY_MAX_MS, Math.max(1_000, this.#retryMs * 2));
        const said = isMeshError(error)
          ? error
          : new MeshError(ErrorCode.ACCOUNT_UPDATE_FAILED, String(error), { cause: error });
        this.#options.onDeferred?.(said, this.#retryMs);
        // Not holding the process open: a controller that stops keeps the list on disk.
        await delay(this.#retryMs, undefined, { ref: false });
      }
    }
  }
}

/** The controller's pusher: each update it pushes, and each the bus did not take, in its log. */
export function revocationPusher(
  accounts: AccountAuthority,
  log: ((line: string) => void) | undefined,
): RevocationPusher {
  return new RevocationPusher({
    accounts,
    onPushed: (n, ms) => log?.(`controller: ${n} revoked (account update ${ms} ms)`),
    onDeferred: (error, inMs) =>
      log?.(`controller: ${error.message}; the revocations wait, pushed again in ${inMs} ms`),
  });
}
