/**
 * What the page derives from the entries: which nodes and modules there are, whether a node is
 * present, what needs attention, where a module is placed, which asks are open.
 */
import type { Ask, CompositionVerdict, Difference, Have, Presence, Want } from "@mesh/protocol";
import { splitKey } from "./format.js";
import { now, values } from "./model.js";
import { PRESENCE_STALE_MS, Source } from "./wire.js";

/** Every node any source names, sorted. */
export function nodes(): string[] {
  const out = new Set<string>(values(Source.presence).keys());
  for (const source of [Source.wants, Source.have, Source.differences]) {
    for (const key of values(source).keys()) out.add(splitKey(key)[0]);
  }
  return [...out].sort();
}

/** Every module any source names, sorted. */
export function modules(): string[] {
  const out = new Set<string>(values(Source.modules).keys());
  for (const source of [Source.wants, Source.have, Source.differences, Source.assignments]) {
    for (const key of values(source).keys()) out.add(splitKey(key)[1]);
  }
  return [...out].sort();
}

/** Whether a node's heartbeat is recent enough to call it present. */
export function present(presence: Presence | undefined): boolean {
  return presence !== undefined && now() - Date.parse(presence.heartbeat) < PRESENCE_STALE_MS;
}

/** Asks without an answer, oldest first. */
export function openAsks(): Ask[] {
  const answers = values(Source.answers);
  return [...values<Ask>(Source.asks).values()]
    .filter((ask) => !answers.has(ask.id))
    .sort((a, b) => a.at.localeCompare(b.at));
}

/**
 * Whether a cell needs attention: it differs, or it is not healthy where it is wanted, or it runs
 * unhealthy (not stopped) where it is not.
 */
export function cellTroubled(node: string, module: string): boolean {
  const key = `${node}.${module}`;
  const want = values<Want>(Source.wants).get(key);
  const have = values<Have>(Source.have).get(key);
  if (values<Difference>(Source.differences).has(key)) return true;
  if (want !== undefined && have?.health !== "healthy") return true;
  return have !== undefined && have.health !== "healthy" && have.health !== "stopped";
}

/** Whether a node needs attention: it is gone, or its composition was refused. */
export function nodeTroubled(node: string): boolean {
  return (
    !present(values<Presence>(Source.presence).get(node)) ||
    values<CompositionVerdict>(Source.compositions).get(node)?.verdict === "refused"
  );
}

/** Where the operator placed a module: every node, some nodes, or nowhere. */
export function placement(module: string): string {
  const targets = [...values(Source.assignments).keys()]
    .map(splitKey)
    .filter(([, m]) => m === module)
    .map(([target]) => target);
  if (targets.length === 0) return "not assigned";
  return targets.includes("all") ? "on every node" : `on ${targets.sort().join(", ")}`;
}
