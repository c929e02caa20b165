/**
 * A connection's state as one value with a change signal (decision 0102): whether the bus is
 * reached now, since when, through which server, and the last outage it came back from. Every
 * daemon that acts on the bus going and coming back reads this value and listens for its
 * changes, instead of following the client's status events itself and keeping its own copy.
 */
import type { Status } from "@nats-io/nats-core";
import type { MeshError } from "@mesh/protocol";
import { toMeshError } from "./bus-errors.js";

/** `connected`: the bus answers; `away`: lost, reconnecting by itself; `closed`: for good. */
export type ConnectionStatus = "connected" | "away" | "closed";

export interface ConnectionState {
  readonly status: ConnectionStatus;
  /** The server it is connected to, or was last. */
  readonly server: string;
  /** When it came to this status (ISO time). */
  readonly since: string;
  /** How many times it came back after being away. */
  readonly returns: number;
  /** The last outage it came back from, once there was one. */
  readonly lastOutage?: { readonly lost: string; readonly back: string };
}

/** Told each change of status, with the state before it. */
export type ConnectionListener = (now: ConnectionState, before: ConnectionState) => void;

/** Keeps one connection's state from its client's status events and tells each change. */
export class ConnectionStates {
  #state: ConnectionState;
  readonly #listeners = new Set<ConnectionListener>();
  readonly #onListenerError: (error: unknown) => void;

  constructor(server: string, onListenerError: (error: unknown) => void, at = new Date()) {
    this.#state = { status: "connected", server, since: at.toISOString(), returns: 0 };
    this.#onListenerError = onListenerError;
  }

  get value(): ConnectionState {
    return this.#state;
  }

  /**
   * Calls `listener` at each change of status from now on, until the signal aborts or the
   * returned function is called. A listener that throws is said, and still told the next change.
   */
  onChange(listener: ConnectionListener, options: { signal?: AbortSignal } = {}): () => void {
    const { signal } = options;
    if (signal?.aborted === true || this.#state.status === "closed") return () => undefined;
    // Each listener is its own entry, so one added twice is told twice and removed once each.
    const entry: ConnectionListener = (now, before) => listener(now, before);
    const off = (): void => {
      this.#listeners.delete(entry);
      signal?.removeEventListener("abort", off);
    };
    this.#listeners.add(entry);
    signal?.addEventListener("abort", off, { once: true });
    return off;
  }

  /** Applies one status event of the client; only a change of status is told. */
  apply(status: Status, at = new Date()): void {
    const before = this.#state;
    if (status.type === "disconnect" && before.status === "connected") {
      this.#set({ ...before, status: "away", server: status.server, since: at.toISOString() });
    } else if (status.type === "reconnect" && before.status === "away") {
      const back = at.toISOString();
      this.#set({
        status: "connected",
        server: status.server,
        since: back,
        returns: before.returns + 1,
        lastOutage: { lost: before.since, back },
      });
    }
  }

  /** The connection closed for good: told once, then nobody is told anything again. */
  close(at = new Date()): void {
    if (this.#state.status === "closed") return;
    this.#set({ ...this.#state, status: "closed", since: at.toISOString() });
    this.#listeners.clear();
  }

  #set(next: ConnectionState): void {
    const before = this.#state;
    this.#state = next;
    for (const listener of [...this.#listeners]) {
      try {
        listener(next, before);
      } catch (error) {
        this.#onListenerError(error);
      }
    }
  }
}

/** One raw event of the connection (`MeshBus.events()`), errors too: for tests that count them. */
export type BusEvent =
  | { readonly type: "disconnected"; readonly server: string }
  | { readonly type: "reconnected"; readonly server: string }
  | { readonly type: "error"; readonly error: MeshError };

/** The raw event a client status is, when it is one. */
export function toBusEvent(status: Status): BusEvent | undefined {
  switch (status.type) {
    case "disconnect":
      return { type: "disconnected", server: status.server };
    case "reconnect":
      return { type: "reconnected", server: status.server };
    case "error":
      return {
        type: "error",
        error: toMeshError(status.error, { doing: "on the bus connection" }),
      };
    default:
      return undefined;
  }
}
