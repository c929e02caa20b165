/**
 * One node's composition as the controller sends it, planned from the node's inputs: core's
 * `compose` for the resources, plus what the host's provisioner client needs per module (build,
 * manifest digest, declared config defaults, bound values), and the bus principals the
 * composition implies (the runtime's, each module process's that declares its credential) with
 * the permissions core's grant functions derive. Pure: sealing happens after, in the controller
 * (a presence whose key cannot be sealed to is refused here, checked without I/O).
 */
import { publicKeyProblem } from "@mesh/bus";
import {
  BROKER_SECRET,
  ObjectStore,
  RUNTIME_MODULE,
  type ComposedModule,
  type Manifest,
} from "@mesh/protocol";
import {
  boundValues,
  compose,
  compositionInput,
  moduleGrant,
  runtimeGrant,
  type Composition,
  type CompositionRefusal,
  type CompositionRuleId,
  type GrantProblem,
  type StateDeclaration,
} from "@mesh/core";
import { PrincipalKind, principalUser, type DesiredPrincipal } from "./broker.js";
import type { NodeInputs } from "./fleet.js";

export interface PlanContext {
  /** The bus urls a module is told (`bound.servers`). */
  readonly servers: readonly string[];
  /** The artifact store every source is routed through; absent: none (every source refused). */
  readonly artifactStore?: string | undefined;
  /** The states each owner keeps, for grants of reads. */
  readonly ownerStates: (module: string) => readonly StateDeclaration[] | undefined;
}

/**
 * The controller's own reasons not to compose a node, beside core's `CompositionRule`: an input
 * that is missing or broken, or planning that failed unexpectedly. With core's, the closed table
 * of the codes a refusal of a node is said with.
 */
export const NodeInputRule = {
  "presence-missing": "a node is composed once its presence (its public key) is in mesh-presence",
  "presence-key-invalid":
    "a node's presence carries an X25519 public key its needs can be sealed to",
  "manifest-missing": "every wanted build's resolved manifest is in mesh-manifests",
  "manifest-invalid": "every wanted build's manifest passes the manifest check",
  "manifest-module": "a want's manifest is of the module it is wanted for",
  "plan-failed": "planning a node does not fail unexpectedly (a bug; the detail is in the log)",
} as const;
export type NodeRefusalCode = CompositionRuleId | keyof typeof NodeInputRule;

/**
 * Why a node was not composed: core's refusals, or an input that is missing or broken (told as
 * core tells its own, with a code of the controller's table).
 */
export type NodeRefusal = Omit<CompositionRefusal, "code" | "node"> & {
  readonly code: NodeRefusalCode;
};

/**
 * A node composed: the composition's node, resources (their needs not yet sealed) and what it left
 * out and what its host must have (decision 0202), with what the controller adds: each module's
 * part, the principals and the grant problems.
 */
export type NodePlan =
  | (Pick<
      Extract<Composition, { ok: true }>,
      "ok" | "node" | "resources" | "leftOut" | "requires"
    > & {
      readonly modules: Readonly<Record<string, ComposedModule>>;
      readonly principals: readonly DesiredPrincipal[];
      readonly grantProblems: readonly GrantProblem[];
    })
  | { readonly ok: false; readonly node: string; readonly refusals: readonly NodeRefusal[] };

export function planNode(inputs: NodeInputs, context: PlanContext): NodePlan {
  const { node, presence } = inputs;
  const { manifests, refusals } = wantedManifests(inputs);
  if (presence === undefined) {
    refusals.push({
      code: "presence-missing",
      reason: `${node} has no presence in mesh-presence, so there is no public key to seal its credentials to`,
      fix: `start the node's host (it writes its presence), or join the node first (mesh join)`,
    });
  }
  const keyProblem = presence === undefined ? undefined : publicKeyProblem(presence.publicKey);
  if (keyProblem !== undefined) {
    // Refused here, with the node named, so one node's broken presence never fails the pass.
    refusals.push({
      code: "presence-key-invalid",
      reason: `${node}'s presence in mesh-presence carries a public key its needs cannot be sealed to: ${keyProblem}`,
      fix: `restart the node's host so it writes its presence again from its key file (<root>/node.key), or join the node again (mesh join)`,
    });
  }
  if (refusals.length > 0 || presence === undefined) return { ok: false, node, refusals };

  const facts = presence.facts;
  const composition = compose(
    compositionInput({ node, modules: manifests, facts, artifactStore: context.artifactStore }),
  );
  if (!composition.ok) {
    return {
      ok: false,
      node,
      refusals: composition.refusals.map((r: CompositionRefusal) => ({
        code: r.code,
        ...(r.module === undefined ? {} : { module: r.module }),
        reason: r.reason,
        fix: r.fix,
      })),
    };
  }

  const leftOut = new Set(composition.leftOut.map((l) => l.module));
  const composed = manifests.filter((m) => !leftOut.has(m.module));
  const { principals, grantProblems } = nodePrincipals(node, composed, context);
  return {
    ok: true,
    node,
    resources: composition.resources,
    modules: composedModules(inputs, composed, context),
    principals,
    grantProblems,
    leftOut: composition.leftOut,
    ...(composition.requires === undefined ? {} : { requires: composition.requires }),
  };
}

/** The manifests of what the node wants, in module order, and a refusal for each that cannot be used. */
function wantedManifests(inputs: NodeInputs): {
  manifests: Manifest[];
  refusals: NodeRefusal[];
} {
  const { node } = inputs;
  const refusals: NodeRefusal[] = [];
  const manifests: Manifest[] = [];
  for (const [module, { want, manifest }] of [...inputs.wanted].sort(([a], [b]) => cmp(a, b))) {
    const digest = `${want.manifestDigest.slice(0, 12)}…`;
    if (manifest === undefined) {
      refusals.push({
        code: "manifest-missing",
        module,
        reason: `${node} wants ${module} build ${want.build}, whose manifest ${digest} is not in mesh-manifests`,
        fix: `build ${module} again (the builder writes the resolved manifest), or unassign it`,
      });
    } else if (!manifest.ok) {
      const first = manifest.problems[0];
      const detail =
        first === undefined
          ? ""
          : typeof first === "string"
            ? first
            : `${first.path}: ${first.message}`;
      refusals.push({
        code: "manifest-invalid",
        module,
        reason: `${node} wants ${module} build ${want.build}, whose manifest ${digest} is refused (${manifest.problems.length} problem(s); first: ${detail})`,
        fix: `fix ${module}'s manifest (mesh manifest check) and build it again`,
      });
    } else if (manifest.manifest.module !== module) {
      refusals.push({
        code: "manifest-module",
        module,
        reason: `${node} wants ${module}, but the manifest ${digest} is of ${JSON.stringify(manifest.manifest.module)}`,
        fix: "the assigner wrote a want with another module's manifest digest; let it write the want again",
      });
    } else manifests.push(manifest.manifest);
  }
  return { manifests, refusals };
}

/** The node's runtime principal and one for each module with its own broker secret, with their grants. */
function nodePrincipals(
  node: string,
  composed: readonly Manifest[],
  context: PlanContext,
): { principals: DesiredPrincipal[]; grantProblems: GrantProblem[] } {
  const owners = new Map<string, readonly StateDeclaration[]>();
  for (const m of composed) {
    for (const read of m.reads) {
      const owner = read.slice(0, read.indexOf("/"));
      const states = context.ownerStates(owner);
      if (states !== undefined) owners.set(owner, states);
    }
  }
  const principals: DesiredPrincipal[] = [];
  const grantProblems: GrantProblem[] = [];
  const add = (
    module: string,
    kind: PrincipalKind,
    grant: ReturnType<typeof moduleGrant>,
  ): void => {
    principals.push({
      user: principalUser(node, module),
      node,
      module,
      kind,
      permissions: grant.permissions,
    });
    grantProblems.push(...grant.problems);
  };
  if (composed.some((m) => m.module === RUNTIME_MODULE)) {
    add(RUNTIME_MODULE, PrincipalKind.runtime, runtimeGrant({ node, modules: composed, owners }));
  }
  for (const m of composed) {
    if (m.module === RUNTIME_MODULE || m["own-secrets"][BROKER_SECRET] === undefined) continue;
    add(m.module, PrincipalKind.module, moduleGrant({ node, manifest: m, owners }));
  }
  return { principals, grantProblems };
}

/** Each composed module's build, config defaults and bound values, as the composition says them. */
function composedModules(
  inputs: NodeInputs,
  composed: readonly Manifest[],
  context: PlanContext,
): Record<string, ComposedModule> {
  const modules: Record<string, ComposedModule> = {};
  for (const m of composed) {
    const want = inputs.wanted.get(m.module)?.want;
    const config: Record<string, { default?: unknown }> = {};
    for (const key of Object.keys(m.config).sort()) {
      const declared = m.config[key];
      config[key] = declared?.default === undefined ? {} : { default: declared.default };
    }
    modules[m.module] = {
      ...(want === undefined ? {} : { build: want.build, manifestDigest: want.manifestDigest }),
      config: config as ComposedModule["config"],
      bound: boundValues(inputs.node, m, context.servers),
    };
  }
  return modules;
}

/** The artifact store the controller routes through by default. */
export const DEFAULT_ARTIFACT_STORE = ObjectStore.artifacts;

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
