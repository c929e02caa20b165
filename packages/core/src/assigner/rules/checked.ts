/**
 * Rule 9, checked: the composition check of the node's whole wanted set. When it refuses, the
 * modules whose build moved and that the refusals name go back to their previous want (all moved
 * modules when a refusal names none, or when reverting the named ones is not enough); a module
 * with no previous want, or whose previous build is marked failing, is then not wanted, with the
 * reason (decision 0033).
 */
import { ObjectStore } from "@mesh/protocol";
import { compose, type Composition } from "../../composition.js";
import { compositionInput } from "../../composition-input.js";
import type { Proposal, Unwanted } from "../model.js";
import type { NodeCells, NodeRule, NodeSet } from "./rule.js";

export const checked: NodeRule<"checked"> = {
  name: "checked",
  scope: "node",
  decide(cells, set) {
    const composition = composeSet(cells, set.proposals);
    if (composition === undefined || composition.ok) return { ...set, composition };
    const refused = composition.refusals.map((r) => `${r.reason}; ${r.fix}`);
    let last: NodeSet = { ...set, composition, refused: [...set.refused, ...refused] };
    for (const revert of attempts(cells, set.proposals, composition)) {
      last = revertAll(cells, set, revert, composition, last.refused);
      if (last.composition === undefined || last.composition.ok) break;
    }
    return last;
  },
};

/** The node's wanted set through core's `compose`, from the input the controller's plan composes too. */
export function composeSet(
  cells: NodeCells,
  proposals: ReadonlyMap<string, Proposal>,
): Composition | undefined {
  if (proposals.size === 0) return undefined;
  const presence = [...cells.cells.values()][0]?.snapshot.presence.get(cells.node);
  return compose(
    compositionInput({
      node: cells.node,
      modules: [...proposals.values()].map((p) => p.usable.manifest),
      facts: presence?.facts,
      artifactStore: ObjectStore.artifacts,
    }),
  );
}

type Refused = Extract<Composition, { ok: false }>;

/** Which modules to revert, in the order to try: the blamed ones first, then every moved one. */
function attempts(
  cells: NodeCells,
  proposals: ReadonlyMap<string, Proposal>,
  refusal: Refused,
): string[][] {
  const changed = [...proposals.entries()]
    .filter(([m, p]) => cells.cells.get(m)?.previous?.build !== p.usable.build.build)
    .map(([m]) => m);
  const named = new Set(refusal.refusals.map((r) => r.module));
  const blame = refusal.refusals.every((r) => r.module !== undefined)
    ? changed.filter((m) => named.has(m))
    : changed;
  return blame.length > 0 && blame.length < changed.length ? [blame, changed] : [changed];
}

function revertAll(
  cells: NodeCells,
  set: NodeSet,
  revert: readonly string[],
  refusal: Refused,
  refused: readonly string[],
): NodeSet {
  const proposals = new Map(set.proposals);
  const unwanted = new Map<string, Unwanted>(set.unwanted);
  const reasons = refusal.refusals.map((r) => r.reason).join("; ");
  for (const module of revert) {
    const cell = cells.cells.get(module);
    const proposed = set.proposals.get(module);
    if (cell === undefined || proposed === undefined) continue;
    const why = `the composition check refuses ${module} build ${proposed.usable.build.build} on ${cells.node} (${reasons})`;
    const prev = cell.index?.usable.get(cell.previous?.build ?? "");
    if (prev === undefined || cell.marks.has(prev.build.build)) {
      proposals.delete(module);
      unwanted.set(cell.key, { rule: "checked", reason: `${why}; nothing was wanted before` });
    } else {
      const reason = `${why}; the previous want ${prev.build.build} stands`;
      proposals.set(module, { usable: prev, rule: "checked", reason });
    }
  }
  return {
    node: set.node,
    proposals,
    unwanted,
    composition: composeSet(cells, proposals),
    refused,
  };
}
