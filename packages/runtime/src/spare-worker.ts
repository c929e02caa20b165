/**
 * One worker kept booted ahead: its bootstrap and the modules the runtime provides (`@mesh/sdk`,
 * `zod`) loaded, no module code. When a module needs a worker (an idle module called, a module
 * restarted), it takes this one and hands it its module with a `start` message, so the start
 * costs only the module's own code. Another spare is booted once that module has loaded (not
 * beside it, where it would only slow the start it is meant to speed up).
 *
 * Every module's worker is started with the same environment and resource limits, so a spare
 * fits any of them; it has run no module code when it is handed over, and from then on belongs
 * to that module alone.
 */
import { Worker, type ResourceLimits } from "node:worker_threads";
import { within } from "@mesh/kit";
import type { FromWorker, WorkerSpare } from "@mesh/sdk/internal";

export interface SpareOptions {
  readonly workerFile: URL;
  readonly env: Record<string, string>;
  readonly resourceLimits: ResourceLimits;
  readonly external?: WorkerSpare["external"];
}

export class SpareWorker {
  readonly #o: SpareOptions;
  #spare: Worker | undefined;
  #ready = false;
  #closed = false;
  /** Told when the spare now booting says it is ready (or ends before). */
  #onReady: Array<() => void> = [];

  constructor(options: SpareOptions) {
    this.#o = options;
  }

  /** Boots a spare if there is none. */
  prepare(): void {
    if (this.#closed || this.#spare !== undefined) return;
    const data: WorkerSpare = {
      v: 1,
      spare: true,
      ...(this.#o.external === undefined ? {} : { external: this.#o.external }),
    };
    const worker = new Worker(this.#o.workerFile, {
      workerData: data,
      resourceLimits: this.#o.resourceLimits,
      env: this.#o.env,
      name: "mesh-module-spare",
    });
    // A spare that ends before it is taken (it should not) is simply not there any more.
    worker.once("exit", () => {
      if (this.#spare === worker) this.#spare = undefined;
      this.#told();
    });
    worker.on("error", () => undefined);
    worker.on("message", (message: FromWorker) => {
      if (message.t === "spare-ready" && this.#spare === worker) {
        this.#ready = true;
        this.#told();
      }
    });
    worker.unref();
    this.#spare = worker;
    this.#ready = false;
  }

  /** Whether the spare has booted (what a bench waits for before it times a cold start). */
  get ready(): boolean {
    return this.#ready;
  }

  /** Resolves once the spare is ready, there is none booting, or after `ms`. */
  async whenReady(ms: number): Promise<void> {
    if (this.#ready || this.#spare === undefined) return;
    await within(new Promise<void>((resolve) => this.#onReady.push(resolve)), ms, undefined);
  }

  #told(): void {
    const waiting = this.#onReady;
    this.#onReady = [];
    for (const tell of waiting) tell();
  }

  /** The spare, taken, or undefined when there is none. */
  take(): Worker | undefined {
    const worker = this.#spare;
    this.#spare = undefined;
    if (worker === undefined) return undefined;
    worker.removeAllListeners("exit");
    worker.removeAllListeners("error");
    worker.removeAllListeners("message");
    worker.ref();
    this.#ready = false;
    this.#told();
    return worker;
  }

  /** Ends the spare; none is prepared again. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#spare;
    this.#spare = undefined;
    this.#told();
    await worker?.terminate();
  }
}
