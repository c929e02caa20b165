/**
 * The calls in a module's worker: each with its id and its deadline, which the runtime keeps
 * itself (a worker that blocks its event loop cannot), settled by the worker's answer, its
 * deadline or the worker's end. A drain waits here for the last one to leave.
 */
import type { Worker } from "node:worker_threads";
import { withDeadline } from "@mesh/kit";
import { CallHeader, ErrorCode, MeshError } from "@mesh/protocol";
import { post } from "./module-asks.js";

export interface PendingCall {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class WorkerCalls {
  readonly #module: string;
  readonly #node: string;
  readonly #maxTimeoutMs: number;
  /** Told each time a call leaves the worker, however it ended. */
  readonly #onEnded: () => void;
  readonly #calls = new Map<number, PendingCall>();
  /** A drain waiting for the calls in flight to end. */
  readonly #draining = new Set<() => void>();
  #nextCall = 1;

  constructor(options: {
    module: string;
    node: string;
    maxTimeoutMs: number;
    onEnded: () => void;
  }) {
    this.#module = options.module;
    this.#node = options.node;
    this.#maxTimeoutMs = options.maxTimeoutMs;
    this.#onEnded = options.onEnded;
  }

  get size(): number {
    return this.#calls.size;
  }

  /** Posts a call to the worker; its promise settles with the answer, or TIMEOUT at the deadline. */
  run(worker: Worker, tool: string, input: unknown, timeoutMs: number): Promise<unknown> {
    const id = this.#nextCall++;
    const call = withDeadline(
      () =>
        new Promise((resolve, reject) => {
          this.#calls.set(id, { resolve, reject });
          post(worker, { v: 1, t: "call", id, tool, input, timeoutMs });
        }),
      {
        ms: timeoutMs,
        expired: () =>
          new MeshError(
            ErrorCode.TIMEOUT,
            `${this.#module}/${tool} did not finish within ${timeoutMs} ms; its handler was told to stop (its signal aborted). ` +
              `Give a longer deadline with the ${CallHeader.timeoutMs} header (at most ${this.#maxTimeoutMs} ms), or make the tool faster`,
            { module: this.#module, node: this.#node },
          ),
      },
    );
    // A call still held when its promise fails is past its deadline (an answer or the worker's
    // end lets go of it first): it leaves, and the worker is told to stop its handler.
    call.catch(() => this.#expired(worker, id));
    return call;
  }

  #expired(worker: Worker, id: number): void {
    if (!this.#calls.delete(id)) return;
    post(worker, { v: 1, t: "cancel", id });
    this.#ended();
  }

  /** Settles a call the worker answered; one that already timed out is left alone. */
  settle(id: number, how: (call: PendingCall) => void): void {
    const call = this.#calls.get(id);
    if (call === undefined) return; // already timed out
    this.#calls.delete(id);
    how(call);
    this.#ended();
  }

  /** Fails every call in the worker (it ended), and wakes a drain. */
  failAll(why: string, log: (text: string) => void): void {
    for (const [id, call] of this.#calls) {
      this.#calls.delete(id);
      log(`[node-tools] ${this.#module}: a call ended with its worker: ${firstLine(why)}`);
      call.reject(new MeshError(ErrorCode.INTERNAL, `the worker of ${this.#module} ended: ${why}`));
    }
    wakeAll(this.#draining);
  }

  /** Resolves once no call is in the worker, or the worker ended. */
  async drained(stopping: () => boolean): Promise<void> {
    while (this.#calls.size > 0 && !stopping()) {
      await new Promise<void>((resolve) => this.#draining.add(resolve));
    }
  }

  /** A call left the worker: a drain waiting for the last one hears it. */
  #ended(): void {
    this.#onEnded();
    if (this.#calls.size === 0 && this.#draining.size > 0) wakeAll(this.#draining);
  }
}

export function wakeAll(waiters: Set<() => void>): void {
  const all = [...waiters];
  waiters.clear();
  for (const waiter of all) waiter();
}

export function firstLine(text: string): string {
  const line = text.split("\n", 1)[0] ?? text;
  return line;
}
