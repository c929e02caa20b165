/**
 * The page's model of the mesh: every source's entries as the server sent them, and what the
 * page itself holds (its link, the open tools, the selection). A change marks the sections it
 * touches dirty; they are drawn again on the next animation frame, each once.
 */
import { Source, type BusState, type ToolEntry } from "./wire.js";

export const model = {
  entries: new Map<Source, Map<string, unknown>>(
    Object.values(Source).map((s) => [s, new Map<string, unknown>()]),
  ),
  problems: new Map<Source, string>(),
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
  | "tools";

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
];

/** Which sections each source feeds: a change re-renders only those. */
export const SECTIONS_OF: Record<Source, readonly Section[]> = {
  [Source.modules]: ["grid", "summary"],
  [Source.builds]: ["builds", "grid"],
  [Source.assignments]: ["grid"],
  [Source.puts]: ["grid"],
  [Source.presence]: ["nodes", "grid", "summary"],
  [Source.wants]: ["grid", "detail"],
  [Source.have]: ["grid", "detail", "summary"],
  [Source.compositions]: ["nodes", "grid"],
  [Source.differences]: ["grid", "differences", "detail", "summary"],
  [Source.asks]: ["asks", "summary"],
  [Source.answers]: ["asks", "summary"],
  [Source.conditions]: ["conditions"],
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
  // Scripts and tests may rely on this: the first whole state is on the page, not just received.
  if (model.link === "live") document.body.dataset["ready"] = "true";
}

/** Selects a grid cell for the detail panel, or unselects it when it is the selected one. */
export function toggleSelected(node: string, module: string): void {
  const same = model.selected?.node === node && model.selected.module === module;
  model.selected = same ? undefined : { node, module };
  invalidate("grid", "detail");
}
