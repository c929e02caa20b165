/**
 * The runtime's count of each served tool's calls and errors (decision 0172): kept in memory for
 * the current window, filed on `mesh.tool-stats.<node>.<module>` every interval for each module
 * that was called in it, and begun again. A call pays two map lookups and an increment; the bus
 * hears from the runtime once a window per module that moved, never once a call, and a window
 * that cannot be filed (the connection is down or closing) is dropped rather than held back.
 */
import { flush, publish, type MeshBus } from "@mesh/bus";
import { delay } from "@mesh/kit";
import {
  TOOL_STATS_INTERVAL_MS,
  toolStatsSubject,
  type ReplyCode,
  type ToolStats,
} from "@mesh/protocol";

export interface ToolStatsOptions {
  readonly bus: MeshBus;
  readonly node: string;
  /** How often a window is filed (ms); TOOL_STATS_INTERVAL_MS by default. */
  readonly intervalMs?: number;
  readonly log: (text: string) => void;
}

type Counts = { calls: number; errors: number; codes: Partial<Record<ReplyCode, number>> };

export class ToolStatsCounter {
  readonly #o: ToolStatsOptions;
  /** The current window: module → tool → counts. */
  #window = new Map<string, Map<string, Counts>>();
  #from = new Date();
  readonly #stop = new AbortController();
  #stopped = false;

  constructor(options: ToolStatsOptions) {
    this.#o = options;
    void this.#every(options.intervalMs ?? TOOL_STATS_INTERVAL_MS);
  }

  async #every(intervalMs: number): Promise<void> {
    // Not ref'd: counting never keeps a stopping process alive.
    while (await delay(intervalMs, { signal: this.#stop.signal, ref: false })) this.#file();
  }

  /** One call of `module/tool` ended: answered (`code` undefined) or refused with `code`. */
  count(module: string, tool: string, code: ReplyCode | undefined): void {
    let tools = this.#window.get(module);
    if (tools === undefined) this.#window.set(module, (tools = new Map<string, Counts>()));
    let counts = tools.get(tool);
    if (counts === undefined) tools.set(tool, (counts = { calls: 0, errors: 0, codes: {} }));
    counts.calls += 1;
    if (code !== undefined) {
      counts.errors += 1;
      counts.codes[code] = (counts.codes[code] ?? 0) + 1;
    }
  }

  /** Files what the last window counted and stops; stopping twice is harmless. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#stop.abort();
    if (this.#file() > 0) {
      await flush(this.#o.bus).catch(() => undefined);
    }
  }

  /** Files one message per module called in the window; returns how many it filed. */
  #file(): number {
    const window = this.#window;
    const from = this.#from;
    this.#window = new Map();
    this.#from = new Date();
    let filed = 0;
    for (const [module, tools] of window) {
      const body: ToolStats = {
        v: 1,
        node: this.#o.node,
        module,
        from: from.toISOString(),
        to: this.#from.toISOString(),
        tools: Object.fromEntries(tools),
      };
      try {
        publish(this.#o.bus, toolStatsSubject(this.#o.node, module), body);
        filed += 1;
      } catch (error) {
        this.#o.log(`[node-tools] the tool counts of ${module} were not filed: ${String(error)}`);
      }
    }
    return filed;
  }
}
