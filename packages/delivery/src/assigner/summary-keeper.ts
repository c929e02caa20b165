/**
 * The fleet's summary as the assigner keeps it (decision 0090): computed from what the assigner
 * already holds in memory by core's `summarizeFleet` (the one read model) and written under
 * `mesh-summary.fleet`, so `mesh status` and the view's first paint read the fleet's shape in one
 * get instead of reading whole buckets.
 *
 * Coalesced: after a change it waits at least `minIntervalMs` (and twice the last computation)
 * since the last computation, so a burst of changes makes one. Written only when what it says
 * changed — or once every `refreshMs`, so a reader can tell a live summary from one an assigner
 * that stopped left behind. Present and gone move with the clock alone: judged again every
 * `tickMs` without any change.
 */
import { canonicalJson, summarizeFleet, summaryContent, type FleetState } from "@mesh/core";
import type { KvBucket } from "@mesh/bus";
import { SUMMARY_KEY, SUMMARY_REFRESH_MS, type Summary } from "@mesh/protocol";

export interface SummaryKeeperOptions {
  readonly bucket: KvBucket<Summary>;
  /** The fleet's state as it stands now (its `now` is the clock's reading). */
  readonly state: () => FleetState;
  /** The least time between two computations (ms; default 1 s). */
  readonly minIntervalMs?: number;
  /** How often presence is judged again with no change (ms; default 5 s). */
  readonly tickMs?: number;
  /** How often it is written even when it says the same (ms; default a minute). */
  readonly refreshMs?: number;
  readonly log?: (line: string) => void;
}

export class SummaryKeeper {
  readonly #options: SummaryKeeperOptions;
  #dirty = true;
  #wake: (() => void) | undefined;
  #written: { content: string; at: number } | undefined;
  /** How many summaries were written (for tests and logs). */
  writes = 0;

  constructor(options: SummaryKeeperOptions) {
    this.#options = options;
  }

  /** Something the summary reads changed: a computation follows, coalesced. */
  moved(): void {
    this.#dirty = true;
    this.#wake?.();
  }

  /** Computes and writes until `signal` ends; a failed write is logged and tried at the next. */
  async run(signal: AbortSignal): Promise<void> {
    const { minIntervalMs = 1_000, tickMs = 5_000 } = this.#options;
    let took = 0;
    while (!signal.aborted) {
      // A large fleet's computation is judged again less often, so it never takes the process.
      if (!this.#dirty) await this.#sleep(Math.max(tickMs, 10 * took), signal, true);
      if (signal.aborted) return;
      this.#dirty = false;
      const started = performance.now();
      await this.#keep(signal);
      took = performance.now() - started;
      await this.#sleep(Math.max(minIntervalMs, 2 * took), signal, false);
    }
  }

  /** One computation; written when it says something new, or when the last write is old. */
  async #keep(signal: AbortSignal): Promise<void> {
    const summary = summarizeFleet(this.#options.state());
    const content = canonicalJson(summaryContent(summary));
    const now = Date.now();
    const refreshMs = this.#options.refreshMs ?? SUMMARY_REFRESH_MS;
    const written = this.#written;
    if (written !== undefined && written.content === content && now - written.at < refreshMs) {
      return;
    }
    try {
      await this.#options.bucket.put(SUMMARY_KEY, summary, { signal });
      this.#written = { content, at: now };
      this.writes += 1;
    } catch (error) {
      if (signal.aborted) return;
      this.#dirty = true;
      this.#options.log?.(`the fleet's summary could not be written: ${(error as Error).message}`);
    }
  }

  /** Waits `ms`, or (when `wakes`) until something moved, or the signal ends. */
  #sleep(ms: number, signal: AbortSignal, wakes: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      if (wakes) this.#wake = done;
    });
  }
}
