/**
 * The fleet for every open page: the fleet sources of the shared MeshState, indexed once per
 * version, and a summary pushed to pages when the fleet moved — bursts coalesced, and a
 * heartbeat that changes nothing shown (the node was present and still is) not counted.
 */
import type { CompositionVerdict, Difference, Have, Presence, Put, Want } from "@mesh/protocol";
import {
  FLEET_SOURCES,
  Source,
  type FleetSummary,
  type GridPage,
  type GridQuery,
} from "./browser/wire.js";
import { gridPage, indexFleet, nodeState, type FleetIndex, type FleetInput } from "./fleet-view.js";
import type { MeshState } from "./mesh-state.js";

export interface FleetFeedOptions {
  /** Where the entries are, and their changes (the view's MeshState). */
  readonly state: Pick<MeshState, "listen" | "entries">;
  readonly signal: AbortSignal;
  /** How long a burst of changes is gathered before pages hear of it (ms). */
  readonly coalesceMs?: number;
  /** How often presence is judged again, since a node goes gone without any change (ms). */
  readonly tickMs?: number;
  /** The clock, for tests. */
  readonly now?: () => number;
}

/** What the grid and the summary are read from: the fleet sources, and the modules registered. */
const FLEET = new Set<string>([...FLEET_SOURCES, Source.modules]);

export class FleetFeed {
  readonly #state: FleetFeedOptions["state"];
  readonly #now: () => number;
  readonly #coalesceMs: number;
  readonly #listeners = new Set<(summary: FleetSummary) => void>();
  /** Per node, what its presence shows (its state and facts), to tell a heartbeat from a change. */
  readonly #shown = new Map<string, string>();
  #version = 0;
  #index: FleetIndex | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: FleetFeedOptions) {
    this.#state = options.state;
    this.#now = options.now ?? Date.now;
    this.#coalesceMs = options.coalesceMs ?? 250;
    const unlisten = options.state.listen((event) => {
      if (event.type !== "change" || !FLEET.has(event.change.source)) return;
      const { source, key, value } = event.change;
      if (source === Source.presence && !this.#presenceMoved(key, value as Presence | undefined))
        return;
      this.#moved();
    });
    const tick = setInterval(() => this.#judgePresence(), options.tickMs ?? 5_000);
    options.signal.addEventListener(
      "abort",
      () => {
        unlisten();
        clearInterval(tick);
        clearTimeout(this.#timer);
      },
      { once: true },
    );
  }

  /** The fleet in numbers, as of now. */
  summary(): FleetSummary {
    return this.#indexed().summary;
  }

  /** One page of the grid. */
  grid(query: GridQuery): GridPage {
    return gridPage(this.#input(), this.#indexed(), query);
  }

  /** Hears each new summary until the returned function is called. */
  listen(listener: (summary: FleetSummary) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #indexed(): FleetIndex {
    if (this.#index?.version !== this.#version) {
      this.#index = indexFleet(this.#input(), this.#version);
    }
    return this.#index;
  }

  #input(): FleetInput {
    const map = <T>(source: Source) => this.#state.entries(source) as ReadonlyMap<string, T>;
    return {
      now: this.#now(),
      modules: this.#state.entries(Source.modules),
      presence: map<Presence>(Source.presence),
      assignments: this.#state.entries(Source.assignments),
      wants: map<Want>(Source.wants),
      have: map<Have>(Source.have),
      differences: map<Difference>(Source.differences),
      compositions: map<CompositionVerdict>(Source.compositions),
      puts: map<Put>(Source.puts),
    };
  }

  /** Whether a node's presence changed what a page shows of it (not just its heartbeat). */
  #presenceMoved(node: string, presence: Presence | undefined): boolean {
    const shown =
      presence === undefined
        ? undefined
        : `${nodeState(presence, this.#now())} ${JSON.stringify(presence.facts)}`;
    if (this.#shown.get(node) === shown) return false;
    if (shown === undefined) this.#shown.delete(node);
    else this.#shown.set(node, shown);
    return true;
  }

  /** Nodes go gone by the clock alone: judged again now and then. */
  #judgePresence(): void {
    let moved = false;
    const presence = this.#state.entries(Source.presence) as ReadonlyMap<string, Presence>;
    for (const [node, value] of presence) moved = this.#presenceMoved(node, value) || moved;
    if (moved) this.#moved();
  }

  #moved(): void {
    this.#version += 1;
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const summary = this.summary();
      for (const listener of this.#listeners) listener(summary);
    }, this.#coalesceMs);
  }
}
