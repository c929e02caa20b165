/**
 * The page's first paint before the view's mirror holds the whole fleet (decision 0090): the
 * state from the assigner's summary and the buckets that grow with modules, and the first grid
 * page from the keys of its nodes alone, read by direct gets. A large fleet's mirror takes long to
 * fill; a page need not wait for it. Without a summary (an assigner from before it) the page waits
 * for the mirror, as before; so does a small fleet (FIRST_PAINT_ABOVE).
 *
 * Only "what needs attention" is approximate until the mirror is ready: it is the summary's first
 * cells.
 */
import { KvBucket, readNodeKeys, type MeshBus } from "@mesh/bus";
import { allNodesOf, differencesIfWhole, fleetStateOf, nodeState } from "@mesh/core";
import {
  Bucket,
  PRESENCE_GONE_MS,
  parseTargetModuleKey,
  type Build,
  type ModuleWide,
  type Summary,
} from "@mesh/protocol";
import {
  GRID_MAX_MODULES,
  Source,
  type BuildSummary,
  type FleetSummary,
  type GridPage,
  type GridQuery,
  type Snapshot,
} from "./browser/wire.js";
import { readShape } from "./fleet-by-key.js";
import { gridPage, placeModules, type FleetIndex } from "./fleet-view.js";

/**
 * A fleet of at most this many cells (assigned and leaving) waits for the mirror, which fills
 * quickly and is exact to the moment; a larger one is painted first from the summary.
 */
export const FIRST_PAINT_ABOVE = 1_000;

/** How long the state and a grid page asked together share one read of the shape (ms). */
const SHAPE_KEPT_MS = 2_000;

/** What the first paint reads once, shared by the state and the grid asked together. */
interface Shape {
  readonly summary: Summary;
  readonly wide: ModuleWide;
  readonly nodes: readonly string[];
  readonly modules: readonly string[];
}

export class FirstPaint {
  readonly #bus: MeshBus;
  readonly #signal: AbortSignal;
  #shape: Promise<Shape | undefined> | undefined;
  /** When the shape was read: a page asking later reads it again. */
  #readAt = 0;

  readonly #onPainted: () => void;

  readonly #above: number;

  constructor(options: {
    readonly bus: MeshBus;
    readonly signal: AbortSignal;
    /** Told once a first grid page was served, or there is no summary to paint from. */
    readonly onPainted?: () => void;
    /** Only a fleet of more cells than this is painted from the summary (default 1,000). */
    readonly above?: number;
  }) {
    this.#bus = options.bus;
    this.#signal = options.signal;
    this.#onPainted = options.onPainted ?? (() => undefined);
    this.#above = options.above ?? FIRST_PAINT_ABOVE;
  }

  /** Whether there is a summary of a fleet large enough to paint from it. */
  async applies(): Promise<boolean> {
    return (await this.#read()) !== undefined;
  }

  /** The page's state from the summary; undefined when there is none. */
  async state(now: Date = new Date()): Promise<Snapshot | undefined> {
    const shape = await this.#read();
    if (shape === undefined) return undefined;
    const entries: Snapshot["entries"] = {
      [Source.modules]: Object.fromEntries(shape.wide.registrations),
      [Source.builds]: Object.fromEntries(
        [...shape.wide.builds].map(([key, build]) => [key, withoutLog(build)]),
      ),
      [Source.asks]: Object.fromEntries(shape.wide.asks),
      [Source.answers]: Object.fromEntries(shape.wide.answers),
      [Source.conditions]: Object.fromEntries(
        shape.wide.conditions.map((c) => [`${c.module}.${c.name}`, c]),
      ),
      [Source.rollouts]: await this.#rollouts(Bucket.rollouts),
      [Source.configWaves]: await this.#rollouts(Bucket.configWaves),
    };
    return {
      at: now.toISOString(),
      entries,
      fleet: fleetSummary(shape),
      problems: {},
      bus: "connected",
    };
  }

  /** Every rollout record (of builds or config values), read whole: it grows with modules only. */
  async #rollouts(
    name: typeof Bucket.rollouts | typeof Bucket.configWaves,
  ): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    try {
      const bucket = await KvBucket.open(this.#bus, name);
      for (const key of await bucket.keys(">", { signal: this.#signal })) {
        const entry = await bucket.get(key, { signal: this.#signal }).catch(() => undefined);
        if (entry !== undefined) out[key] = entry.value;
      }
    } catch {
      // A mesh without rollouts yet: the whole state brings them once its watch stands.
    }
    return out;
  }

  /** One grid page from its nodes' keys; undefined when there is no summary. */
  async grid(query: GridQuery, now: Date = new Date()): Promise<GridPage | undefined> {
    const shape = await this.#read();
    if (shape === undefined) return undefined;
    try {
      return await this.#grid(shape, query, now);
    } finally {
      this.#onPainted();
    }
  }

  async #grid(shape: Shape, query: GridQuery, now: Date): Promise<GridPage> {
    const index: FleetIndex = {
      version: 0,
      nodes: shape.nodes,
      modules: shape.modules,
      nodeStates: new Map(),
      troubled: shape.summary.attention.first.map((c) => [c.node, c.module] as const),
      troubledNodes: new Set(),
      placements: placeModules(shape.wide),
      summary: fleetSummary(shape),
    };
    // The window of nodes the page shows, as the grid narrows and windows them.
    const probe = gridPage(fleetStateOfNothing(shape, now), index, query);
    const window = probe.columns.map((c) => c.node);
    const rows = probe.rows.map((r) => r.module).slice(0, GRID_MAX_MODULES);
    const known = differencesIfWhole(shape.summary);
    const keys = await readNodeKeys(this.#bus, {
      nodes: window,
      cells: window.flatMap((node) => rows.map((module) => ({ node, module }))),
      ...(known === undefined ? {} : { differences: known }),
      signal: this.#signal,
    });
    const input = { ...fleetStateOf(shape.wide, keys, now.getTime()), puts: shape.wide.puts };
    const nodeStates = new Map(window.map((n) => [n, nodeState(keys.presence.get(n), input.now)]));
    return gridPage(input, { ...index, nodeStates }, query);
  }

  /** The summary, the module-wide buckets and the node names: read once, for the first paint. */
  #read(): Promise<Shape | undefined> {
    if (performance.now() - this.#readAt > SHAPE_KEPT_MS) this.#shape = undefined;
    this.#shape ??= (async () => {
      this.#readAt = performance.now();
      const read = await readShape(this.#bus, { above: this.#above, signal: this.#signal });
      if (read === "none" || !("summary" in read)) {
        this.#onPainted();
        return undefined;
      }
      const { summary, wide, present, byModule } = read;
      const modules = new Set<string>([...wide.registrations.keys(), ...byModule.keys()]);
      for (const key of wide.assignments.keys()) modules.add(moduleOf(key));
      for (const m of summary.modules) modules.add(m.module);
      modules.delete("");
      return {
        summary,
        wide,
        nodes: allNodesOf(present, byModule),
        modules: [...modules].sort(),
      };
    })();
    // A failed read is tried again by the next page.
    this.#shape.catch(() => (this.#shape = undefined));
    return this.#shape;
  }
}

/** The page's summary of the fleet from the assigner's. */
function fleetSummary(shape: Shape): FleetSummary {
  const { summary } = shape;
  return {
    version: 0,
    nodes: summary.nodes,
    modules: shape.modules.length,
    cells: {
      healthy: summary.cells.healthy,
      starting: summary.cells.starting,
      notRunning: summary.cells.notRunning,
    },
    attention: { cells: summary.attention.cells, nodes: summary.attention.nodes },
    differences: summary.differences,
    presenceGoneMs: PRESENCE_GONE_MS,
  };
}

/** A state with no node's keys: enough for the grid to narrow and window the names. */
function fleetStateOfNothing(shape: Shape, now: Date) {
  const none = new Map();
  return {
    ...fleetStateOf(
      shape.wide,
      { presence: none, compositions: none, wants: none, have: none, differences: none },
      now.getTime(),
    ),
    puts: shape.wide.puts,
  };
}

function withoutLog({ log, ...build }: Build): BuildSummary {
  return { ...build, logLines: log === "" ? 0 : log.split("\n").length };
}

function moduleOf(key: string): string {
  try {
    return parseTargetModuleKey(key).module;
  } catch {
    return "";
  }
}
