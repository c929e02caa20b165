/**
 * The page's model of the mesh: the page sources' entries as the server sent them, the fleet's
 * summary, the grid page on show, and what the page itself holds (its link, the open tools, the
 * selection). A change marks the sections it
 * touches dirty; they are drawn again on the next animation frame, each once.
 */
import {
  Source,
  type BusState,
  type FleetSummary,
  type GridPage,
  type RolloutCanaries,
  type SessionInfo,
  type ToolEntry,
} from "./wire.js";

/** How many nodes a page of the grid shows. */
export const GRID_PAGE_NODES = 50;

export const model = {
  entries: new Map<Source, Map<string, unknown>>(
    Object.values(Source).map((s) => [s, new Map<string, unknown>()]),
  ),
  problems: new Map<Source, string>(),
  /** The fleet in numbers (pushed by the server). */
  fleet: undefined as FleetSummary | undefined,
  /** Each rollout's canary and its health (asked for with the rollouts and the fleet's moves). */
  canaries: {} as RolloutCanaries,
  /** The page of the grid on show (asked for; again when the fleet's version moves). */
  grid: undefined as GridPage | undefined,
  /** The first node of the grid's page. */
  gridFrom: 0,
  bus: "connected" as BusState,
  /** The page's connection to its server. */
  link: "connecting" as "connecting" | "live" | "lost",
  /** Server clock minus ours, so heartbeat ages do not depend on this machine's clock. */
  skewMs: 0,
  tools: [] as ToolEntry[],
  toolsState: "idle" as "idle" | "loading" | "failed",
  selected: undefined as { node: string; module: string } | undefined,
  openLog: undefined as { key: string; text: string } | undefined,
  lastChange: undefined as Date | undefined,
  gridFilter: "",
  /** Who the page acts as (`GET /api/session`). */
  session: undefined as SessionInfo | undefined,
  problemsOnly: false,
};

/** One source's entries by key (an empty map for a source not received yet). */
export const values = <T>(source: Source): Map<string, T> =>
  (model.entries.get(source) as Map<string, T> | undefined) ?? new Map<string, T>();

/** The server's clock, as near as the page knows it. */
export const now = (): number => Date.now() + model.skewMs;

export type Section =
  | "summary"
  | "asks"
  | "nodes"
  | "grid"
  | "detail"
  | "differences"
  | "conditions"
  | "builds"
  | "tools"
  | "logs"
  | "history"
  | "toolCalls"
  | "actions"
  | "rollouts";

export const ALL_SECTIONS: readonly Section[] = [
  "summary",
  "asks",
  "nodes",
  "grid",
  "detail",
  "differences",
  "conditions",
  "builds",
  "tools",
  "logs",
  "history",
  "toolCalls",
  "actions",
  "rollouts",
];

/**
 * Which sections each page source feeds: a change re-renders only those. (The fleet sources
 * reach the page as the summary and the grid's pages, never key by key.)
 */
export const SECTIONS_OF: Partial<Record<Source, readonly Section[]>> = {
  [Source.builds]: ["builds"],
  [Source.asks]: ["asks", "summary"],
  [Source.answers]: ["asks", "summary"],
  [Source.conditions]: ["conditions"],
  [Source.rollouts]: ["rollouts"],
  [Source.configWaves]: ["rollouts"],
};

let renderers: Record<Section, () => void> | undefined;
const dirty = new Set<Section>();
let frame = 0;

/** Names the function that draws each section; the page's entry does this once. */
export function setRenderers(render: Record<Section, () => void>): void {
  renderers = render;
}

/** Marks sections to be drawn again on the next frame. */
export function invalidate(...sections: readonly Section[]): void {
  for (const s of sections) dirty.add(s);
  if (frame === 0) frame = requestAnimationFrame(renderDirty);
}

function renderDirty(): void {
  frame = 0;
  const sections = [...dirty];
  dirty.clear();
  for (const section of sections) renderers?.[section]();
  // Scripts and tests may rely on this: the first state and grid are on the page, not just received.
  if (model.link === "live" && model.grid !== undefined) document.body.dataset["ready"] = "true";
}

/** Selects a grid cell for the detail panel, or unselects it when it is the selected one. */
export function toggleSelected(node: string, module: string): void {
  const same = model.selected?.node === node && model.selected.module === module;
  model.selected = same ? undefined : { node, module };
  invalidate("grid", "detail", "actions");
}
