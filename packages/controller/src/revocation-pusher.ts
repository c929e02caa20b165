/**
 * Accounts mode: the account updates that carry revocations, pushed beside the controller's
 * passes instead of inside them (issue 13). A pass needs no update: a new user's JWT works at
 * once, and the users file is kept before any credential leaves.
 *
 * An update costs the server a check of every connection of the account (230–560 ms at 1,000
 * connections on this machine, 1–1.5 s while nodes joined), and it answers the account's other
 * requests slowly meanwhile, so updates are few:
 *
 * - a principal really taken away (a node removed, a module unassigned, a superseded JWT past
 *   its grace) is **urgent**: its update leaves after a short gathering ({@link GATHER_MS}), so a
 *   burst of revocations from several passes is one update, and it is refused within ~1 s;
 * - a spent join user's revocation is **gathered**: it protects nearly nothing (a join user may
 *   only ask `mesh.join`, which refuses a used token), so those go in one update at most every
 *   {@link JOIN_REVOCATIONS_EVERY_MS} — or sooner, with the next urgent one.
 *
 * Revocations staged while an update is out go together in the next; an update the bus does not
 * take is tried again 1 s later, doubling up to 30 s. Every revocation is in the account's kept
 * list (`AccountAuthority.record`) before it is staged here, so one that waits is not lost when
 * the controller stops: the next controller pushes the kept list at its start ({@link
 * RevocationPusher.pushKept}).
 */
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import { type AccountAuthority } from "@mesh/bus/server";
import { Backoff, WorkQueue, delay } from "@mesh/kit";

/** A revocation waiting for the next update: up to which second, and when the JWTs expire. */
export interface StagedRevocation {
  readonly at: number;
  readonly expiresAt?: number;
}

/** How a revocation waits: urgent (a principal taken away) or gathered (a spent join user). */
export const Urgency = { urgent: "urgent", gathered: "gathered" } as const;
export type Urgency = (typeof Urgency)[keyof typeof Urgency];

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

/** The revocation of a superseded key: whole (or up to `before`), pruned after its expiry. */
export function supersededRevocation(
  s: { readonly before?: number | undefined; readonly expires?: number | undefined },
  nowS: number,
): StagedRevocation {
  const at = s.before ?? nowS;
  return s.expires === undefined ? { at } : { at, expiresAt: s.expires };
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

/** Stages each of `from` into `into`, merged with what waits there for the same key. */
function stageInto(
  into: Map<string, StagedRevocation>,
  from: ReadonlyMap<string, StagedRevocation>,
): void {
  for (const [key, r] of from) into.set(key, mergeRevocation(into.get(key), r));
}

/** The first and the longest wait before an update the bus did not take is pushed again. */
export const UPDATE_RETRY_FIRST_MS = 1_000;
export const UPDATE_RETRY_MAX_MS = 30_000;

/** How long urgent revocations are gathered before their update leaves (a burst is one). */
export const GATHER_MS = 200;

/** How often, at most, spent join users' revocations get an update of their own. */
export const JOIN_REVOCATIONS_EVERY_MS = 60_000;

/**
 * How much longer than the last update took, at least, gathered revocations wait for an update
 * of their own: the server spends at most a fiftieth of its time on them whatever the fleet. An
 * update's cost grows with the account's connections (3.8–35 s at ~1,500 on the loaded machine
 * while nodes joined, when every watch of the account lapsed meanwhile: decision 0217), so a
 * fixed period would make it the server's main work as a fleet grows.
 */
export const GATHERED_COST_TIMES = 50;

/** One update the bus took: how many keys it revoked (of them gathered), and how long it took. */
export interface PushedUpdate {
  readonly revoked: number;
  readonly gathered: number;
  readonly ms: number;
}

export interface RevocationPusherOptions {
  readonly accounts: AccountAuthority;
  /** How long urgent revocations are gathered ({@link GATHER_MS}). */
  readonly gatherMs?: number;
  /** How often, at most, gathered revocations are pushed ({@link JOIN_REVOCATIONS_EVERY_MS}). */
  readonly gatheredEveryMs?: number;
  /** Told each update the bus took. */
  readonly onPushed?: (update: PushedUpdate) => void;
  /** Told each update the bus did not take, and when it is tried again. */
  readonly onDeferred?: (error: MeshError, retryInMs: number) => void;
}

/** The one key of the pusher's queue: an update is due. */
const PUSH = "push";

export class RevocationPusher {
  readonly #options: RevocationPusherOptions;
  readonly #urgent = new Map<string, StagedRevocation>();
  readonly #gathered = new Map<string, StagedRevocation>();
  /** The kept list goes to the bus even with nothing staged (a controller's start). */
  #kept = false;
  /** When the last update (or this pusher) began: gathered ones wait a period from it. */
  #lastPushAt = Date.now();
  /** How long the last update took, or took to fail (ms). */
  #lastCostMs = 0;
  /** Aborted by `close`: the queue shuts down, a retry's wait ends. */
  readonly #closing = new AbortController();
  /**
   * When the next update leaves: its one key added after the wait (the sooner of two stands).
   * Not holding the process open: what waits is in the kept list.
   */
  readonly #due: WorkQueue<typeof PUSH>;
  #running: Promise<void> | undefined;
  readonly #retry = new Backoff({ initialMs: UPDATE_RETRY_FIRST_MS, maxMs: UPDATE_RETRY_MAX_MS });
  readonly #idle = new Set<() => void>();

  constructor(options: RevocationPusherOptions) {
    this.#options = options;
    // Its per-key backoff goes unused: an update the bus refused waits inside the push, so a
    // revocation staged meanwhile does not cut the wait short.
    this.#due = new WorkQueue({
      policy: { initialMs: UPDATE_RETRY_FIRST_MS, maxMs: UPDATE_RETRY_MAX_MS },
      signal: this.#closing.signal,
      ref: false,
    });
    void this.#work();
  }

  /**
   * Stages `revocations`, already in the account's kept list (`AccountAuthority.record`), for
   * an update: urgent ones after a short gathering, gathered ones within a period.
   */
  add(revocations: ReadonlyMap<string, StagedRevocation>, urgency: Urgency = Urgency.urgent): void {
    if (revocations.size === 0) return;
    stageInto(urgency === Urgency.urgent ? this.#urgent : this.#gathered, revocations);
    this.#schedule();
  }

  /** Pushes the kept list as it stands (what a controller stopped before pushing), urgently. */
  pushKept(): void {
    this.#kept = true;
    this.#schedule();
  }

  /** Whether revocations wait for an update (gathered ones included). */
  get pending(): boolean {
    return this.#urgent.size > 0 || this.#gathered.size > 0 || this.#kept;
  }

  /** How many gathered revocations wait for their period. */
  get gathering(): number {
    return this.#gathered.size;
  }

  /**
   * Resolves once no urgent revocation waits and no update is out; gathered ones may still
   * wait for their period. An update the bus refuses keeps it waiting.
   */
  settled(): Promise<void> {
    if (this.#running === undefined && !this.#urgentWaits()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.add(resolve));
  }

  /** Stops waiting; what waits is in the kept list, which the next start pushes. */
  close(): void {
    this.#closing.abort();
    for (const resolve of this.#idle) resolve();
    this.#idle.clear();
  }

  get #closed(): boolean {
    return this.#closing.signal.aborted;
  }

  #urgentWaits(): boolean {
    return this.#urgent.size > 0 || this.#kept;
  }

  /** When the next update is due (epoch ms), or undefined when nothing waits. */
  #dueAt(): number | undefined {
    if (this.#urgentWaits()) return Date.now() + (this.#options.gatherMs ?? GATHER_MS);
    if (this.#gathered.size === 0) return undefined;
    return this.#lastPushAt + this.#gatheredPeriodMs();
  }

  /** How long gathered revocations wait from the last update: the period, or the cost's share. */
  #gatheredPeriodMs(): number {
    const every = this.#options.gatheredEveryMs ?? JOIN_REVOCATIONS_EVERY_MS;
    return Math.max(every, GATHERED_COST_TIMES * this.#lastCostMs);
  }

  /** Asks for the next update when it is due, unless one is out (it looks again when it ends). */
  #schedule(): void {
    if (this.#closed || this.#running !== undefined) return;
    const due = this.#dueAt();
    if (due !== undefined) this.#due.requeueAfter(PUSH, due - Date.now());
  }

  /** Pushes each time the update is due, until closed. */
  async #work(): Promise<void> {
    for (let key = await this.#due.get(); key !== undefined; key = await this.#due.get()) {
      this.#running = this.#run();
      try {
        await this.#running;
      } finally {
        this.#running = undefined;
        this.#due.done(key);
        this.#schedule();
        if (!this.#urgentWaits()) {
          for (const resolve of this.#idle) resolve();
          this.#idle.clear();
        }
      }
    }
  }

  #gatheredDue(): boolean {
    return this.#gathered.size > 0 && Date.now() >= this.#lastPushAt + this.#gatheredPeriodMs();
  }

  async #run(): Promise<void> {
    while (!this.#closed && (this.#urgentWaits() || this.#gatheredDue())) {
      // Gathered ones go with any update: the account JWT carries the whole kept list anyway.
      const urgent = new Map(this.#urgent);
      const gathered = new Map(this.#gathered);
      const kept = this.#kept;
      this.#urgent.clear();
      this.#gathered.clear();
      this.#kept = false;
      const started = Date.now();
      try {
        await this.#options.accounts.push();
        this.#lastPushAt = started;
        this.#lastCostMs = Date.now() - started;
        this.#retry.reset();
        this.#options.onPushed?.({
          revoked: urgent.size + gathered.size,
          gathered: gathered.size,
          ms: Date.now() - started,
        });
      } catch (error) {
        stageInto(this.#urgent, urgent);
        stageInto(this.#gathered, gathered);
        this.#kept ||= kept;
        // The server may still be working through it: its cost counts, and gathered ones
        // alone wait for their period again rather than queue a second update behind it.
        this.#lastPushAt = started;
        this.#lastCostMs = Date.now() - started;
        const urgentWaits = this.#urgentWaits();
        const retryMs = urgentWaits
          ? Math.max(this.#retry.next(), this.#lastCostMs)
          : this.#gatheredPeriodMs();
        const said = isMeshError(error)
          ? error
          : new MeshError(ErrorCode.ACCOUNT_UPDATE_FAILED, String(error), { cause: error });
        this.#options.onDeferred?.(said, retryMs);
        if (!urgentWaits) return;
        // Not holding the process open: a controller that stops keeps the list on disk.
        await delay(retryMs, { signal: this.#closing.signal, ref: false });
      }
    }
  }
}

/**
 * The controller's pusher in accounts mode (none otherwise): each update it pushes, and each the
 * bus did not take, in its log.
 */
export function revocationPusher(options: {
  readonly accounts?: AccountAuthority;
  readonly log?: (line: string) => void;
  readonly joinRevocationsEveryMs?: number;
}): RevocationPusher | undefined {
  const { accounts, log, joinRevocationsEveryMs } = options;
  if (accounts === undefined) return undefined;
  return new RevocationPusher({
    accounts,
    ...(joinRevocationsEveryMs === undefined ? {} : { gatheredEveryMs: joinRevocationsEveryMs }),
    onPushed: ({ revoked, gathered, ms }) =>
      log?.(
        `controller: ${revoked} revoked, ${gathered} of them spent join users (account update ${ms} ms)`,
      ),
    onDeferred: (error, inMs) =>
      log?.(`controller: ${error.message}; the revocations wait, pushed again in ${inMs} ms`),
  });
}
