/**
 * The lines a host read while it had no bus. A host reads its processes' output from its first
 * moment (adopted processes included: what they wrote while no host ran waits in their pipes) and
 * connects after, or loses the bus for a while; those lines are in the log files either way, and
 * are kept here, up to a bound, to be sent once the bus is there, so `mesh logs` shows what a
 * process said while its host was away, not only the files.
 */
import type { LogLine } from "@mesh/protocol";

/** How many lines are kept for the bus; older ones are dropped first, and counted. */
export const DEFAULT_OUTBOX_LINES = 2_000;

export class LogOutbox {
  readonly #limit: number;
  #held: Array<{ readonly module: string; readonly line: LogLine }> = [];
  #dropped = 0;

  constructor(limit = DEFAULT_OUTBOX_LINES) {
    this.#limit = limit;
  }

  /** How many lines wait for the bus. */
  get size(): number {
    return this.#held.length;
  }

  /** Keeps a line for the bus, dropping the oldest beyond the bound. */
  hold(module: string, line: LogLine): void {
    this.#held.push({ module, line });
    if (this.#held.length > this.#limit) {
      this.#held.shift();
      this.#dropped += 1;
    }
  }

  /**
   * Hands every kept line to `send`, oldest first, and forgets them. Returns how many were dropped
   * since the last drain (they are in the log files only).
   */
  drain(send: (module: string, line: LogLine) => void): number {
    const held = this.#held;
    const dropped = this.#dropped;
    this.#held = [];
    this.#dropped = 0;
    for (const { module, line } of held) send(module, line);
    return dropped;
  }
}
