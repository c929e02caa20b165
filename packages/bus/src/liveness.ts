/**
 * How a connection notices that its server is gone, and which server it dials then (decisions
 * 0140 and 0182). Beyond a partition a server sends nothing, not even a reset: only missed
 * pongs tell, and a dial to it waits out its whole timeout.
 */
import type { Server } from "@nats-io/nats-core";

/** How often a connection pings its server (ConnectOptions.pingIntervalMs). */
export const DEFAULT_PING_INTERVAL_MS = 2_000;

/**
 * A ping every `pingIntervalMs` (2 s), and the connection counted lost when a third would go out
 * with two unanswered: 4–6 s after its server went silent. The client's default, 2 minutes, kept
 * a node on a server it could not reach for 4–6 minutes.
 */
export function liveness(pingIntervalMs?: number): { pingInterval: number; maxPingOut: number } {
  return { pingInterval: pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS, maxPingOut: 2 };
}

/**
 * Which server a reconnect dials: the one of the pool dialled longest ago, a server never
 * dialled first. The client's own choice is the head of its pool, which after the first
 * connection is the server just lost: beyond a partition that dial waits out its whole timeout
 * (5 s) before another server is tried, and a node took 10.5 s to fail over. Null (the client's
 * choice) when the head is the one dialled longest ago already, as at the first connection.
 */
export function leastRecentlyDialled(pool: readonly Server[]): Server | null {
  let pick = pool[0];
  for (const server of pool) {
    if (pick === undefined || server.lastConnect < pick.lastConnect) pick = server;
  }
  return pick === undefined || pick === pool[0] ? null : pick;
}
