/**
 * The fleet's summary as the assigner keeps it (decisions 0090, 0120, 0121): kept by core's
 * `SummaryIndex` from the keys each burst of changes moved — equal to `summarizeFleet` (the one
 * read model) of what the assigner holds, at the cost of what the changes reach — and written
 * under `mesh-summary.fleet`, so `mesh status` and the view's first paint read the fleet's shape
 * in one get instead of reading whole buckets.
 *
 * It holds no timer (seed 003): a computation follows a watched change that can move the summary,
 * coalesced — at least `minIntervalMs` (and twice the last computation) after the one before, so
 * a burst of changes makes one or two — and is written only when what it says changed. Gone is
 * judged by the clock, yet never on a clock: a heartbeat is a watched change, and one that comes
 * after the first present node's heartbeat went stale (or from a node that was gone) makes a
 * computation, which judges every node at that moment. At rest nothing is computed or written.
 */
import {
  SummaryIndex,
  canonicalJson,
  nodeState,
  summaryContent,
  type FleetChange,
  type FleetState,
} from "@mesh/core";
import type { KvBucket } from "@mesh/bus";
import { delay } from "@mesh/kit";
import { SUMMARY_KEY, type Presence, type Summary } from "@mesh/protocol";

export interface SummaryKeeperOptions {
  readonly bucket: KvBucket<Summary>;
  /** The fleet's state as it stands now (its `now` is the clock's reading). */
  readonly state: () => FleetState;
  /** The least time between two computations while changes come (ms; default 1 s). */
  readonly minIntervalMs?: number;
  readonly log?: (line: string) => void;
}

export class SummaryKeeper {
  readonly #options: SummaryKeeperOptions;
  #dirty = true;
  #wake: (() => void) | undefined;
  #written: string | undefined;
  readonly #index = new SummaryIndex();
  /** What moved since the last computation, by source and key. */
  #pending = new Map<string, FleetChange>();
  /** How many summaries were written (for tests and logs). */
  writes = 0;
  /** How many were computed. */
  computations = 0;

  constructor(options: SummaryKeeperOptions) {
    this.#options = options;
  }

  /** Keys the summary reads changed: a computation follows, coalesced. */
  moved(changes: Iterable<FleetChange>): void {
    for (const c of changes) this.#pending.set(`${c.source}\u0000${c.key}`, c);
    this.#dirty = true;
    this.#wake?.();
  }

  /**
   * A node's heartbeat moved and nothing else of its presence (`before`: what it said before):
   * it can move the summary only when the node was not present, or some present node's
   * heartbeat went stale since the last computation.
   */
  heartbeat(node: string, before: Presence): void {
    const now = Date.now();
    if (nodeState(before, now) !== "present") this.moved([{ source: "presence", key: node }]);
    // The index re-judges the nodes whose heartbeat went stale by itself.
    else if (now >= this.#index.horizon) this.moved([]);
  }

  /** Computes and writes after each change until `signal` ends; a failed write is tried at the next. */
  async run(signal: AbortSignal): Promise<void> {
    const { minIntervalMs = 1_000 } = this.#options;
    let took = 0;
    while (!signal.aborted) {
      if (!this.#dirty) await this.#moved(signal);
      if (signal.aborted) return;
      this.#dirty = false;
      const started = performance.now();
      await this.#keep(signal);
      took = performance.now() - started;
      // Only while changes come: a wait a change started, gathering the rest of its burst.
      await this.#moved(signal);
      await delay(Math.max(minIntervalMs, 2 * took) - (performance.now() - started), { signal });
    }
  }

  /** One computation; written when it says something new. */
  async #keep(signal: AbortSignal): Promise<void> {
    const state = this.#options.state();
    const changes = this.#pending.values();
    this.#pending = new Map();
    const summary = this.#index.update(state, changes);
    this.computations += 1;
    const content = canonicalJson(summaryContent(summary));
    if (this.#written === content) return;
    try {
      await this.#options.bucket.put(SUMMARY_KEY, summary, { signal });
      this.#written = content;
      this.writes += 1;
    } catch (error) {
      if (signal.aborted) return;
      // Written with the next change's computation: the summary holds no timer of its own.
      this.#options.log?.(`the fleet's summary could not be written: ${(error as Error).message}`);
    }
  }

  /** Resolves once something moved (or the signal ends). */
  #moved(signal: AbortSignal): Promise<void> {
    if (this.#dirty || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener("abort", done);
        this.#wake = undefined;
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      this.#wake = done;
    });
  }
}
