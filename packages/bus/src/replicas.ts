/**
 * How many copies of a stream the bus allows, and waiting for a cluster's JetStream to answer.
 *
 * The mesh asks for {@link MAX_REPLICAS} and takes what the bus gives: one server refuses any
 * replica beyond the first (10074 "replicas > 1 not supported in non-clustered mode"), a cluster
 * with fewer servers than asked refuses with 10005 "no suitable peers for placement" (or 10023
 * "insufficient resources" when its servers are full). Verified on nats-server 2.9.10. A server
 * that is not in a cluster says so in its INFO (no `cluster` field), so no attempt is wasted
 * there; in a cluster the count is found by stepping down from the wanted one, once per
 * connection.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { delay } from "@mesh/kit";
import { natsOf, type MeshBus } from "./mesh-bus.js";
import { causeChain } from "./bus-errors.js";

/** Three copies: a cluster of three keeps every acknowledged write when any one server dies. */
export const MAX_REPLICAS = 3;

/** The JetStream API codes that mean "not that many copies here". */
const FEWER_REPLICAS = new Set([10074, 10005, 10023]);

const allowed = new WeakMap<NatsConnection, number>();

/** How long a refusal for want of peers is waited out when the bus is known to have them. */
export const PEERS_WAIT_MS = 60_000;

export interface ReplicaOptions {
  /**
   * How many servers the bus is known to run (`mesh up --cluster N` started them): a refusal for
   * want of peers at or below that count means a server's JetStream has not joined yet (a
   * cluster elects its meta leader with a majority, before every server is in), so it is
   * waited out for up to {@link PEERS_WAIT_MS} instead of taking fewer copies for good.
   */
  readonly peers?: number;
  readonly signal?: AbortSignal;
}

/**
 * Runs `create` with the most replicas the bus allows up to `wanted` (default MAX_REPLICAS),
 * stepping down on the bus's refusal; resolves to the count that was taken.
 */
export async function withAllowedReplicas(
  bus: MeshBus,
  wanted: number | undefined,
  create: (replicas: number) => Promise<unknown>,
  options: ReplicaOptions = {},
): Promise<number> {
  const most = Math.max(1, Math.floor(wanted ?? MAX_REPLICAS));
  const clustered =
    typeof (natsOf(bus).nc.info as { cluster?: unknown } | undefined)?.cluster === "string";
  let replicas = Math.min(most, clustered ? (allowed.get(natsOf(bus).nc) ?? most) : 1);
  const waitUntil = Date.now() + PEERS_WAIT_MS;
  for (;;) {
    try {
      await create(replicas);
      if (clustered) allowed.set(natsOf(bus).nc, replicas);
      return replicas;
    } catch (error) {
      if (replicas <= 1 || !fewerReplicas(error)) throw error;
      const joining = replicas <= (options.peers ?? 0) && Date.now() < waitUntil;
      // A stop while waiting ends the wait; the next refusal then takes fewer copies.
      if (joining && options.signal?.aborted !== true) {
        await delay(250, options.signal === undefined ? {} : { signal: options.signal });
        continue;
      }
      replicas -= 1;
    }
  }
}

function fewerReplicas(error: unknown): boolean {
  return causeChain(error).some((e) => {
    const code = (e as { code?: unknown }).code;
    return typeof code === "number" && FEWER_REPLICAS.has(code);
  });
}

/**
 * Resolves once JetStream answers its API (`$JS.API.INFO`, which only an admin credential is
 * granted). A cluster that has just started has no meta leader for about 5 s (docs/nats.md §5)
 * and its API does not answer meanwhile; a single server answers at once. Throws
 * JETSTREAM_UNAVAILABLE when it has not answered within `timeoutMs` (default 60 s).
 */
export async function waitForJetStream(
  bus: MeshBus,
  options: { readonly timeoutMs?: number; readonly signal?: AbortSignal } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const until = Date.now() + timeoutMs;
  const jsm = await jetstreamManager(natsOf(bus).nc, { checkAPI: false, timeout: 2_000 });
  let last: unknown;
  for (;;) {
    if (options.signal?.aborted === true) {
      throw new MeshError(ErrorCode.ABORTED, "waiting for JetStream was aborted", {
        cause: options.signal.reason,
      });
    }
    try {
      await jsm.getAccountInfo();
      return;
    } catch (error) {
      last = error;
      if (/permission/i.test((error as Error).message)) return; // not ours to ask: go on
    }
    if (Date.now() >= until) break;
    // A stop ends the wait at once; the loop then says ABORTED.
    await delay(250, options.signal === undefined ? {} : { signal: options.signal });
  }
  throw new MeshError(
    ErrorCode.JETSTREAM_UNAVAILABLE,
    `JetStream on the bus at ${bus.credential.servers.join(", ")} did not answer within ${timeoutMs} ms ` +
      `(${(last as Error | undefined)?.message ?? "no answer"}); in a cluster, more than half of the ` +
      "servers must be up to elect a leader — start the missing servers or check their logs",
    { cause: last },
  );
}

/** Where a stream lives: its copies and, in a cluster, the server leading it. */
export interface StreamPlacement {
  readonly replicas: number;
  /** The leading server's name; undefined on a single server. */
  readonly leader: string | undefined;
  /**
   * The other copies as the leader sees them: whether each is current, and how many operations it
   * lags (a server back from a partition catches up until it is current with lag 0).
   */
  readonly followers: readonly {
    readonly name: string;
    readonly current: boolean;
    readonly lag: number;
  }[];
}

/** A stream's (or a bucket's, by its stream name) copies and leader; needs STREAM.INFO. */
export async function streamPlacement(bus: MeshBus, stream: string): Promise<StreamPlacement> {
  const jsm = await jetstreamManager(natsOf(bus).nc, { checkAPI: false });
  const info = await jsm.streams.info(stream);
  return {
    replicas: info.config.num_replicas,
    leader: info.cluster?.leader,
    followers: (info.cluster?.replicas ?? []).map((r) => ({
      name: r.name,
      current: r.current,
      lag: r.lag ?? 0,
    })),
  };
}
