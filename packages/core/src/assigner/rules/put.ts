/**
 * Rule 3, put: an operator's put (the node's own before `all`) pins a named build. A put to a
 * build that is not usable is not honoured, and the reason of the want that stands says so.
 */
import { putOf } from "../model.js";
import type { CellRule } from "./rule.js";

export const put: CellRule<"put"> = {
  name: "put",
  scope: "cell",
  decide(cell, decided) {
    if (decided.kind !== "open") return decided;
    const found = putOf(cell);
    if (found === undefined) return decided;
    const { put: p, where } = found;
    const usable = cell.index?.usable.get(p.build);
    if (usable !== undefined) {
      const why = p.why === "" ? "" : `: ${p.why}`;
      return {
        kind: "want",
        proposal: {
          usable,
          rule: "put",
          reason: `${p.by} put ${cell.module} on ${where} to build ${p.build}${why}`,
        },
      };
    }
    const status = cell.index?.builds.get(p.build)?.status;
    const note = `the put to build ${p.build} is not honoured: ${status === undefined ? "no such build" : `it is ${status}`}`;
    return { kind: "open", notes: [...decided.notes, note] };
  },
};
