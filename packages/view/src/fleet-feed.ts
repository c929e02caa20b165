/**
 * The fleet for every open page: the fleet sources of the shared MeshState, indexed once per
 * version, and a summary pushed to pages when the fleet moved — bursts coalesced, and a
 * heartbeat that changes nothing shown (the node was present and still is) not counted.
 */
import { nodeState } from "@mesh/core";
import type {
  Answer,
  Ask,
  Build,
  CompositionVerdict,
  Condition,
  Difference,
  Have,
  ModuleRegistration,
  Presence,
  Put,
  Want,
} from "@mesh/protocol";
import {
  FLEET_SOURCES,
  Source,
  type BuildSummary,
  type FleetSummary,
  type GridPage,
  type GridQuery,
} from "./browser/wire.js";
import { gridPage, indexFleet, type FleetIndex, type FleetInput } from "./fleet-view.js";
import type { MeshState } from "./mesh-state.js";

export interface FleetFeedOptions {
  /** Where the entries are, and their changes (the view's MeshState). */
  readonly state: Pick<MeshState, "listen" | "entries" | "buildLog">;
  readonly signal: AbortSignal;
  /**
   * How long a burst of changes is gathered before pages hear of it (ms); at least twice as long
   * as indexing the fleet last took.
   */
  readonly coalesceMs?: number;
  /** How often presence is judged again, since a node goes gone without any change (ms). */
  readonly tickMs?: number;
  /** The clock, for tests. */
  readonly now?: () => number;
}

/**
 * What the grid and the summary are read from: the fleet sources, and what the read model also
 * reasons with (registrations, builds, asks and answers, conditions).
 */
const FLEET = new Set<string>([
  ...FLEET_SOURCES,
  Source.modules,
  Source.builds,
  Source.asks,
  Source.answers,
  Source.conditions,
]);

export class FleetFeed {
  readonly #state: FleetFeedOptions["state"];
  readonly #now: () => number;
  readonly #coalesceMs: number;
  readonly #listeners = new Set<(summary: FleetSummary) => void>();
  /** Per node, what its presence shows (its state and facts), to tell a heartbeat from a change. */
  readonly #shown = new Map<string, string>();
  #version = 0;
  #index: FleetIndex | undefined;
  /**
   * How long the last index took: a burst waits at least twice that, so indexing a large fleet
   * never takes more than about a third of the server's time.
   */
  #indexMs = 0;
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
      const started = performance.now();
      this.#index = indexFleet(this.#input(), this.#version);
      this.#indexMs = performance.now() - started;
    }
    return this.#index;
  }

  #input(): FleetInput {
    const map = <T>(source: Source) => this.#state.entries(source) as ReadonlyMap<string, T>;
    return {
      now: this.#now(),
      presence: map<Presence>(Source.presence),
      assignments: this.#state.entries(Source.assignments) as FleetInput["assignments"],
      registrations: map<ModuleRegistration>(Source.modules),
      builds: this.#builds(),
      wants: map<Want>(Source.wants),
      have: map<Have>(Source.have),
      differences: map<Difference>(Source.differences),
      compositions: map<CompositionVerdict>(Source.compositions),
      asks: map<Ask>(Source.asks),
      answers: map<Answer>(Source.answers),
      conditions: [...map<Condition>(Source.conditions).values()],
      puts: map<Put>(Source.puts),
    };
  }

  /** The builds as the bus holds them: the state keeps their logs apart. */
  #builds(): ReadonlyMap<string, Build> {
    const builds = this.#state.entries(Source.builds) as ReadonlyMap<string, BuildSummary>;
    return new Map(
      [...builds].map(([key, { logLines: _lines, ...build }]) => [
        key,
        { ...build, log: this.#state.buildLog(key) ?? "" },
      ]),
    );
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
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        const summary = this.summary();
        for (const listener of this.#listeners) listener(summary);
      },
      Math.max(this.#coalesceMs, 2 * this.#indexMs),
    );
  }
}
