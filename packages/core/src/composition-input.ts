/**
 * What a node's composition is computed from: the manifests it wants and its presence's facts.
 * The assigner's composition check and the controller's plan both build it here, so the check
 * composes what the controller will (they had drifted: the check left out the node's root).
 */
import type { Manifest, Presence } from "@mesh/protocol";
import type { NodeResolution } from "./composition.js";

export interface CompositionInputOptions {
  readonly node: string;
  /** The resolved manifests of the modules the node wants, in any order. */
  readonly modules: readonly Manifest[];
  /** The node's facts from its presence; none before the node was heard. */
  readonly facts: Presence["facts"] | undefined;
  /** The object store sources are routed through; none (or empty): the mesh has no store. */
  readonly artifactStore: string | undefined;
}

/** The resolution `compose` takes for a node. */
export function compositionInput(options: CompositionInputOptions): NodeResolution {
  const { node, modules, facts, artifactStore } = options;
  return {
    node,
    modules,
    account: facts?.account,
    accountHome: facts?.accountHome,
    adopted: facts?.adopted,
    root: facts?.root,
    artifacts:
      artifactStore === undefined || artifactStore === "" ? undefined : { store: artifactStore },
  };
}
