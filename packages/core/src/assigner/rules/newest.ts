/** Rule 4, newest: the build of the newest candidate that built, when no put decided. */
import type { CellRule } from "./rule.js";

export const newest: CellRule<"newest"> = {
  name: "newest",
  scope: "cell",
  decide(cell, decided) {
    const top = cell.index?.newest;
    if (decided.kind !== "open" || top === undefined) return decided;
    const newer = [...(cell.index?.builds.values() ?? [])]
      .filter((b) => b.candidate > top.build.candidate && b.status !== "built")
      .map((b) => `${b.build} ${b.status}`)
      .sort();
    const parts = [
      `the newest build of ${cell.module}, of candidate ${top.build.candidate}`,
      ...(newer.length === 0 ? [] : [`newer: ${newer.join(", ")}`]),
      ...decided.notes,
    ];
    return { kind: "want", proposal: { usable: top, rule: "newest", reason: parts.join("; ") } };
  },
};
