/**
 * The assigner's rules as an ordered chain. The order is data: protocol's `RULE_ORDER`, from
 * which its `Rule` is derived; this table gives each name its rule, so a rule without a file, or
 * a file without a place in the order, does not compile. Cell rules run first, in order, for each
 * module on a node; node rules then decide the node's whole set.
 */
import { RULE_ORDER, type Rule } from "@mesh/protocol";
import { built } from "./built.js";
import { checked } from "./checked.js";
import { halt } from "./halt.js";
import { newest } from "./newest.js";
import { placed } from "./placed.js";
import { put } from "./put.js";
import type { CellRule, NodeRule } from "./rule.js";
import { setBack } from "./set-back.js";
import { waves } from "./waves.js";
import { widening } from "./widening.js";

const BY_NAME: { readonly [N in Rule]: CellRule<N> | NodeRule<N> } = {
  placed,
  built,
  put,
  newest,
  "set-back": setBack,
  halt,
  waves,
  widening,
  checked,
};

/** Every rule, in the order they apply. */
export const RULES: ReadonlyArray<CellRule | NodeRule> = RULE_ORDER.map((name) => BY_NAME[name]);

/** The cell rules, in order. */
export const CELL_RULES: readonly CellRule[] = RULES.filter(
  (r): r is CellRule => r.scope === "cell",
);

/** The node rules, in order; they run after every cell rule. */
export const NODE_RULES: readonly NodeRule[] = RULES.filter(
  (r): r is NodeRule => r.scope === "node",
);

export { askId, widen } from "./widening.js";
export type { CellRule, NodeRule, NodeSet, NodeCells } from "./rule.js";
