/**
 * The shape of a rule. A cell rule decides one module on one node from what the rules before it
 * decided; a node rule decides a node's whole wanted set once every cell rule has run.
 */
import type { Rule } from "@mesh/protocol";
import type { Composition } from "../../composition.js";
import type { Cell, Decision, Proposal, Unwanted } from "../model.js";

export interface CellRule<N extends Rule = Rule> {
  readonly name: N;
  readonly scope: "cell";
  /** Called only while the decision is `open` or `want`: a `none` ends the chain for the cell. */
  decide(cell: Cell, decided: Decision): Decision;
}

/** One node's wanted set, as a node rule receives and returns it. */
export interface NodeSet {
  readonly node: string;
  readonly proposals: ReadonlyMap<string, Proposal>;
  /** `<node>.<module>` → why nothing is wanted, for modules a node rule stopped wanting. */
  readonly unwanted: ReadonlyMap<string, Unwanted>;
  /** The composition of the final set; undefined when nothing is wanted. */
  readonly composition: Composition | undefined;
  /** Refusals of the sets not advanced to, as `reason; fix`. */
  readonly refused: readonly string[];
}

export interface NodeRule<N extends Rule = Rule> {
  readonly name: N;
  readonly scope: "node";
  decide(cells: NodeCells, set: NodeSet): NodeSet;
}

/** What a node rule reads besides the set: the node's cells by module. */
export interface NodeCells {
  readonly node: string;
  readonly cells: ReadonlyMap<string, Cell>;
}

export type AnyRule = CellRule | NodeRule;

export const none = (rule: Rule, reason: string): Decision => ({
  kind: "none",
  unwanted: { rule, reason },
});
