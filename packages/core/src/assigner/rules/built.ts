/** Rule 2, built: only builds that finished, whose resolved manifest is stored with every archive's digest. */
import { none, type CellRule } from "./rule.js";

export const built: CellRule<"built"> = {
  name: "built",
  scope: "cell",
  decide(cell, decided) {
    const { index, module } = cell;
    if (index !== undefined && index.usable.size > 0) return decided;
    const failed = [...(index?.builds.values() ?? [])].filter((b) => b.status === "failed").length;
    return none(
      "built",
      `no build of ${module} has finished with its manifest and archives stored` +
        (failed > 0 ? ` (${failed} failed: see \`mesh builds ${module}\`)` : ""),
    );
  },
};
