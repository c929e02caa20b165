/**
 * Rule 1, placed: an assignment (`<node>.<module>` or `all.<module>`) and a node that has been
 * present (it is in presence, or a want of the cell stands).
 */
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
    // A want standing says the node was present when it was written: a presence lost from under
    // the assigner (its bucket deleted and made again) unwants nothing — on the delivery node that
    // would stop the assigner itself, and nothing would want it again.
    if (!cell.present && cell.previous === undefined) {
      return none("placed", `${module} is assigned to ${node}, but ${node} has not been present`);
    }
    return decided;
  },
};
