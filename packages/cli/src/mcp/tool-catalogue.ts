/**
 * The tools `mesh mcp` offers: what `$SRV` discovery finds, narrowed to the modules and node
 * asked for, one entry per module and tool however many nodes serve it. It follows the mesh
 * rather than polling: a change of `mesh-wants` or `mesh-have` (a module assigned, served, gone,
 * or a new build running) starts a short burst of rediscoveries, and each one that finds the
 * tools changed tells the listeners — the MCP server then sends `notifications/tools/list_changed`.
 * The two buckets are followed by a reconciler with one key, like every reader's mirror: a watch
 * that ends or stalls is noticed and watched again, and what changed meanwhile starts a burst
 * (issue 27); a flurry of changes is one key in its queue.
 */
import { delay } from "@mesh/kit";
import {
  discoverTools,
  openedOnWatch,
  reconciler,
  type DiscoveredTool,
  type MeshBus,
} from "@mesh/bus";
import { Bucket, type Have, type Want } from "@mesh/protocol";

/** Between module and tool in an MCP tool name; a module name cannot hold `_`, so it splits once. */
export const TOOL_NAME_SEPARATOR = "__";

/** One tool as an MCP client sees it. */
export interface CatalogueTool {
  /** `<module>__<tool>`. */
  readonly name: string;
  readonly module: string;
  readonly tool: string;
  readonly description: string;
  readonly input: unknown;
  readonly output: unknown;
  /** The nodes serving it, sorted. */
  readonly nodes: readonly string[];
  /** The service's version on the first node: the module's build (`0.0.0+<build>`). */
  readonly version: string;
}

export interface CatalogueOptions {
  readonly bus: MeshBus;
  /** Only these modules (`--allow`, `--module`); every module when undefined. */
  readonly modules?: readonly string[];
  /** Only the tools served on this node. */
  readonly node?: string;
  /** After a change is seen, rediscover this long after it (ms), in case serving lags. */
  readonly burstMs?: readonly number[];
  readonly log?: (line: string) => void;
}

/** Rediscoveries after one change: at once, then while a restarting runtime comes back. */
const DEFAULT_BURST_MS = [150, 700, 1_500, 3_000, 6_000];

/** The one key the catalogue's reconciler has: something the tools depend on changed. */
const CHANGED = "changed";

export const toolName = (module: string, tool: string): string =>
  `${module}${TOOL_NAME_SEPARATOR}${tool}`;

export class ToolCatalogue implements AsyncDisposable {
  readonly #o: CatalogueOptions;
  readonly #stopping = new AbortController();
  readonly #listeners = new Set<() => void>();
  #tools: CatalogueTool[] = [];
  #fingerprint = "";
  #refreshing: Promise<void> = Promise.resolve();
  /** Aborted when a burst starts over or the catalogue closes: its rediscoveries wait no more. */
  #burstWait = new AbortController();
  /** The reconciler following the mesh, while it runs. */
  #following: Promise<void> | undefined;

  private constructor(options: CatalogueOptions) {
    this.#o = options;
  }

  /** Discovers once and starts following the mesh. */
  static async start(options: CatalogueOptions): Promise<ToolCatalogue> {
    const catalogue = new ToolCatalogue(options);
    await catalogue.refresh();
    catalogue.#follow();
    return catalogue;
  }

  get tools(): readonly CatalogueTool[] {
    return this.#tools;
  }

  find(name: string): CatalogueTool | undefined {
    return this.#tools.find((t) => t.name === name);
  }

  /** Told each time the tools changed; returns the function that stops telling. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Discovers again (one at a time) and tells the listeners when anything changed. */
  refresh(): Promise<void> {
    this.#refreshing = this.#refreshing.then(async () => {
      if (this.#stopping.signal.aborted) return;
      const found = await this.#discover().catch((error: unknown) => {
        this.#o.log?.(`discovery failed: ${(error as Error).message}`);
        return undefined;
      });
      if (found === undefined) return;
      const fingerprint = JSON.stringify(found);
      if (fingerprint === this.#fingerprint) return;
      const first = this.#fingerprint === "";
      this.#tools = found;
      this.#fingerprint = fingerprint;
      if (!first) for (const listener of this.#listeners) listener();
    });
    return this.#refreshing;
  }

  async close(): Promise<void> {
    this.#stopping.abort();
    this.#burstWait.abort();
    this.#listeners.clear();
    await this.#following;
    await this.#refreshing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #discover(): Promise<CatalogueTool[]> {
    const signal = this.#stopping.signal;
    const modules = this.#o.modules;
    const found: DiscoveredTool[] =
      modules === undefined
        ? await discoverTools(this.#o.bus, { signal })
        : (
            await Promise.all(
              modules.map((module) => discoverTools(this.#o.bus, { signal, module })),
            )
          ).flat();
    const byName = new Map<string, DiscoveredTool[]>();
    for (const t of found) {
      if (modules !== undefined && !modules.includes(t.module)) continue;
      if (this.#o.node !== undefined && t.node !== this.#o.node) continue;
      const name = toolName(t.module, t.tool);
      byName.set(name, [...(byName.get(name) ?? []), t]);
    }
    return [...byName.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, served]) => {
        const sorted = [...served].sort((a, b) => a.node.localeCompare(b.node));
        const first = sorted[0] as DiscoveredTool;
        return {
          name,
          module: first.module,
          tool: first.tool,
          description: first.description,
          input: first.input,
          output: first.output,
          nodes: [...new Set(sorted.map((t) => t.node))],
          version: first.service.version,
        };
      });
  }

  /**
   * Every change of mesh-wants or mesh-have, also one caught up after a lost watch, starts a
   * burst; so does the mirror standing (what changed between the first discovery and then).
   */
  #follow(): void {
    const following = reconciler({
      sources: {
        // Optional: a bucket this credential cannot open yet is tried again, never given up on.
        wants: { bucket: openedOnWatch(this.#o.bus, Bucket.wants), optional: true, fold: wanted },
        have: { bucket: openedOnWatch(this.#o.bus, Bucket.have), optional: true, fold: served },
      },
      keysOf: () => [CHANGED],
      allKeys: () => [CHANGED],
      reconcile: () => this.#burst(),
      retry: { initialMs: 1_000, maxMs: 60_000 },
      log: (line) => this.#o.log?.(`following the mesh for tools/list: ${line}`),
    });
    // Every source is optional: the run ends with the stop, never on a source it cannot hear.
    this.#following = following.run({ signal: this.#stopping.signal }).catch((error: unknown) => {
      this.#o.log?.(`following the mesh for tools/list ended: ${(error as Error).message}`);
    });
  }

  /** A new change starts the burst over, so a flurry of writes costs one burst, not one each. */
  #burst(): void {
    this.#burstWait.abort();
    const wait = new AbortController();
    this.#burstWait = wait;
    for (const ms of this.#o.burstMs ?? DEFAULT_BURST_MS) {
      void delay(ms, { signal: wait.signal }).then((due) => {
        if (due) void this.refresh();
      });
    }
  }
}

/** What of a want or a have can change the tools served: its build, and a have's health. */
const wanted = (_: unknown, want: Want | undefined) => want?.build;
const served = (_: unknown, have: Have | undefined) =>
  have === undefined ? undefined : `${have.build ?? ""} ${have.health}`;
