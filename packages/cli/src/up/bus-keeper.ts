/**
 * Keeps `mesh up`'s nats-server running: when it dies by itself, it is started again on the same
 * folder, port and store, with the users list as it stands on disk (mesh up's principals and
 * every user the broker issued), after a delay that grows with each quick death. Nothing else is
 * stopped meanwhile: the mesh's processes and the modules reconnect by themselves, so an outage
 * costs the calls made during it and nothing else (docs/reliability.md).
 */
import { setTimeout as delay } from "node:timers/promises";
import { type EmbeddedServer, type ServerExit } from "@mesh/bus/server";
import { Backoff } from "@mesh/kit";

export interface BusKeeperOptions {
  /** Starts the server; called for the first start and for every restart. */
  readonly start: (signal: AbortSignal) => Promise<EmbeddedServer>;
  readonly say: (line: string) => void;
  /** Delays between restarts; by default 250 ms doubling to 30 s, reset after 30 s running. */
  readonly backoff?: Backoff;
}

export class BusKeeper {
  readonly #options: BusKeeperOptions;
  readonly #backoff: Backoff;
  readonly #stopping = new AbortController();
  #server: EmbeddedServer;
  #restarts = 0;
  #loop: Promise<void> = Promise.resolve();

  private constructor(options: BusKeeperOptions, server: EmbeddedServer) {
    this.#options = options;
    this.#backoff =
      options.backoff ?? new Backoff({ initialMs: 250, maxMs: 30_000, healthyMs: 30_000 });
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
    const stopped = aborted(signal);
    for (;;) {
      this.#backoff.started();
      const exit = await Promise.race([this.#server.exited, stopped]);
      if (exit === undefined) return;
      let wait = this.#backoff.next();
      this.#options.say(
        `nats-server stopped by itself (${describe(exit)}); starting it again on the same store ` +
          `in ${wait} ms — the mesh's processes keep running and reconnect`,
      );
      for (;;) {
        if (!(await delay(wait, true, { signal }).catch(() => false))) return;
        try {
          this.#server = await this.#options.start(signal);
          this.#restarts += 1;
          this.#options.say(`nats-server is back (pid ${this.#server.pid})`);
          break;
        } catch (error) {
          if (signal.aborted) return;
          wait = this.#backoff.next();
          this.#options.say(
            `nats-server did not start again: ${(error as Error).message}; trying again in ${wait} ms`,
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
