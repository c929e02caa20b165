/** Rule 1, placed: an assignment (`<node>.<module>` or `all.<module>`) and a node that has been present. */
import { none, type CellRule } from "./rule.js";

export const placed: CellRule<"placed"> = {
  name: "placed",
  scope: "cell",
  decide(cell, decided) {
    const { snapshot, node, module } = cell;
    const assigned = snapshot.assignments.has(cell.key) || snapshot.assignments.has(cell.allKey);
    if (!assigned) {
      return none("placed", `no assignment places ${module} on ${node} or on all nodes`);
    }
    if (!cell.present) {
      return none("placed", `${module} is assigned to ${node}, but ${node} has not been present`);
    }
    return decided;
  },
};
