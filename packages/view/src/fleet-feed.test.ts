/**
 * The fleet feed: pages hear of the fleet when what they show moved — a burst as one summary, a
 * heartbeat that changes nothing not at all, a node gone by the clock alone.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PRESENCE_GONE_MS, type Presence } from "@mesh/protocol";
import { deadline } from "@mesh/bus/testing";
import { Source, type FleetSummary } from "./browser/wire.js";
import { FleetFeed } from "./fleet-feed.js";
import type { StateEvent } from "./mesh-state.js";

const WAIT_MS = 5_000;

/** The entries and changes a MeshState would hand, set by the test. */
class Entries {
  readonly maps = new Map<string, Map<string, unknown>>();
  readonly #listeners = new Set<(event: StateEvent) => void>();
  entries(source: Source): ReadonlyMap<string, unknown> {
    return this.maps.get(source) ?? new Map<string, unknown>();
  }
  buildLog(): string | undefined {
    return undefined;
  }
  listen(listener: (event: StateEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  set(source: Source, key: string, value: unknown): void {
    const map = this.maps.get(source) ?? new Map<string, unknown>();
    this.maps.set(source, map);
    map.set(key, value);
    for (const listener of this.#listeners)
      listener({ type: "change", change: { source, key, value } });
  }
}

const presence = (node: string, at: number): Presence => ({
  node,
  facts: { hostname: `${node}.local`, os: "linux", arch: "x64", version: "0.1.0" },
  publicKey: "MCowBQYDK2VuAyEA0000000000000000000000000000000000000000000=",
  heartbeat: new Date(at).toISOString(),
});
/** Each summary the feed pushes, and a way to wait for the next. */
function summaries(feed: FleetFeed) {
  const heard: FleetSummary[] = [];
  let wake: (() => void) | undefined;
  feed.listen((summary) => {
    heard.push(summary);
    wake?.();
  });
  const nth = (n: number, what: string): Promise<FleetSummary> =>
    deadline(
      (async () => {
        while (heard.length < n) await new Promise<void>((resolve) => (wake = resolve));
        return heard[n - 1] as FleetSummary;
      })(),
      WAIT_MS,
      what,
    );
  return { heard, nth };
}

describe("the fleet feed", () => {
  it("pushes a burst of changes as one summary, and a heartbeat that changes nothing not at all", async () => {
    const stop = new AbortController();
    const state = new Entries();
    const now = Date.now();
    const feed = new FleetFeed({ state, signal: stop.signal, coalesceMs: 10, tickMs: 60_000 });
    const { heard, nth } = summaries(feed);
    try {
      for (let i = 0; i < 100; i += 1) state.set(Source.presence, `n${i}`, presence(`n${i}`, now));
      const first = await nth(1, "the burst's summary");
      assert.equal(first.nodes.present, 100);
      // Only a newer heartbeat: the node was present and still is.
      state.set(Source.presence, "n0", presence("n0", now + 1_000));
      state.set(Source.presence, "n100", presence("n100", now));
      const second = await nth(2, "the new node's summary");
      assert.equal(second.nodes.present, 101);
      assert.equal(second.version, first.version + 1, "the heartbeat moved no version");
      assert.equal(heard.length, 2);
    } finally {
      stop.abort();
    }
  });

  it("tells pages a node is gone when its heartbeat grows old, without any change", async () => {
    const stop = new AbortController();
    const state = new Entries();
    let now = Date.now();
    const feed = new FleetFeed({
      state,
      signal: stop.signal,
      coalesceMs: 10,
      tickMs: 20,
      now: () => now,
    });
    const { nth } = summaries(feed);
    try {
      state.set(Source.presence, "a", presence("a", now));
      assert.equal((await nth(1, "the node's summary")).nodes.present, 1);
      now += PRESENCE_GONE_MS;
      const gone = await nth(2, "the summary of a gone node");
      assert.deepEqual(gone.nodes, { total: 1, present: 0, gone: 1, never: 0 });
    } finally {
      stop.abort();
    }
  });
});
