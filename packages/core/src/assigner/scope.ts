/** Which nodes a full pass decides, and which modules each node's pass considers. */
import { cellOfKey } from "@mesh/protocol";
import type { ModuleIndex } from "./model.js";
import type { AssignerSnapshot } from "./snapshot.js";

/** Every node a full pass decides: present ones, and those the assigner wrote something for. */
export function allNodes(snapshot: AssignerSnapshot): Set<string> {
  const out = new Set<string>(snapshot.presence.keys());
  const add = (key: string): void => {
    const cell = cellOfKey(key);
    if (cell !== undefined) out.add(cell.node);
  };
  for (const key of snapshot.own.wants.keys()) add(key);
  for (const key of snapshot.own.differences.keys()) add(key);
  for (const key of snapshot.own.compositions.keys()) out.add(key);
  for (const key of snapshot.composed.keys()) out.add(key);
  for (const ask of snapshot.own.asks.values()) for (const n of ask.nodes) out.add(n);
  return out;
}

/** The modules each node has keys for, so a full pass also clears wants of modules gone from the mesh. */
export function modulesByNode(snapshot: AssignerSnapshot): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (key: string): void => {
    const cell = cellOfKey(key);
    if (cell === undefined) return;
    const set = out.get(cell.node) ?? new Set<string>();
    set.add(cell.module);
    out.set(cell.node, set);
  };
  for (const key of snapshot.own.wants.keys()) add(key);
  for (const key of snapshot.own.differences.keys()) add(key);
  for (const key of snapshot.have.keys()) add(key);
  for (const key of snapshot.assignments.keys()) add(key);
  return out;
}

/** The modules one node's pass considers, sorted: registered, built, composed there, or keyed there. */
export function modulesOf(
  snapshot: AssignerSnapshot,
  index: ReadonlyMap<string, ModuleIndex>,
  node: string,
  extra: ReadonlyMap<string, ReadonlySet<string>>,
): string[] {
  const modules = new Set<string>([...snapshot.registrations.keys(), ...index.keys()]);
  for (const m of Object.keys(snapshot.composed.get(node)?.modules ?? {})) modules.add(m);
  for (const m of extra.get(node) ?? []) modules.add(m);
  return [...modules].sort();
}
