/**
 * Keeps `mesh up`'s nats-server running: when it dies by itself, it is started again on the same
 * folder, port and store, with the users list as it stands on disk (mesh up's principals and
 * every user the broker issued), after a delay that grows with each quick death. Nothing else is
 * stopped meanwhile: the mesh's processes and the modules reconnect by themselves, so an outage
 * costs the calls made during it and nothing else (docs/reliability.md).
 */
import { setTimeout as delay } from "node:timers/promises";
import type { EmbeddedServer, ServerExit } from "@mesh/bus";

export interface BusKeeperOptions {
  /** Starts the server; called for the first start and for every restart. */
  readonly start: (signal: AbortSignal) => Promise<EmbeddedServer>;
  readonly say: (line: string) => void;
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
  /** A server that ran this long was well: its next death restarts at the initial delay. */
  readonly healthyMs?: number;
  /** 0..1: how much of each delay is random, so restarts of many meshes do not align. */
  readonly jitter?: number;
}

export class BusKeeper {
  readonly #options: Required<Omit<BusKeeperOptions, "start" | "say">> &
    Pick<BusKeeperOptions, "start" | "say">;
  readonly #stopping = new AbortController();
  #server: EmbeddedServer;
  #restarts = 0;
  #loop: Promise<void> = Promise.resolve();

  private constructor(options: BusKeeperOptions, server: EmbeddedServer) {
    this.#options = {
      initialDelayMs: 250,
      maxDelayMs: 30_000,
      healthyMs: 30_000,
      jitter: 0.2,
      ...options,
    };
    this.#server = server;
  }

  /** Starts the server once (a failure here is the caller's) and keeps it running after that. */
  static async start(options: BusKeeperOptions, signal: AbortSignal): Promise<BusKeeper> {
    const keeper = new BusKeeper(options, await options.start(signal));
    keeper.#loop = keeper.#keep(signal);
    return keeper;
  }

  /** The server running now (or the last one, while a restart is under way). */
  get server(): EmbeddedServer {
    return this.#server;
  }

  /** How many times the server was started again after dying. */
  get restarts(): number {
    return this.#restarts;
  }

  async #keep(outer: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([outer, this.#stopping.signal]);
    let delayMs = this.#options.initialDelayMs;
    for (;;) {
      const startedAt = Date.now();
      const exit = await Promise.race([this.#server.exited, aborted(signal)]);
      if (exit === undefined) return;
      if (Date.now() - startedAt >= this.#options.healthyMs) delayMs = this.#options.initialDelayMs;
      this.#options.say(
        `nats-server stopped by itself (${describe(exit)}); starting it again on the same store ` +
          `in ${Math.round(delayMs)} ms — the mesh's processes keep running and reconnect`,
      );
      for (;;) {
        const waited = await delay(withJitter(delayMs, this.#options.jitter), true, {
          signal,
        }).catch(() => false);
        delayMs = Math.min(delayMs * 2, this.#options.maxDelayMs);
        if (!waited) return;
        try {
          this.#server = await this.#options.start(signal);
          this.#restarts += 1;
          this.#options.say(`nats-server is back (pid ${this.#server.pid})`);
          break;
        } catch (error) {
          if (signal.aborted) return;
          this.#options.say(
            `nats-server did not start again: ${(error as Error).message}; trying again in ${Math.round(delayMs)} ms`,
          );
        }
      }
    }
  }

  /** Stops keeping the server and stops the server. Stopping twice is harmless. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
    await this.#server.stop();
  }
}

function withJitter(ms: number, jitter: number): number {
  return ms * (1 - jitter + Math.random() * 2 * jitter);
}

function aborted(signal: AbortSignal): Promise<undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(undefined), { once: true }),
  );
}

function describe(exit: ServerExit): string {
  const how = exit.signal === null ? `code ${String(exit.code)}` : `signal ${exit.signal}`;
  const last = exit.lastLines.at(-1);
  return last === undefined ? how : `${how}; its last line: ${last}`;
}
