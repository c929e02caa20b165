/**
 * What the assigner's rules share: the builds a rule may want, indexed per module, the facts of
 * one (node, module) cell, and the decision each rule hands the next.
 */
import {
  ALL_NODES,
  nodeModuleKey,
  targetModuleKey,
  type Build,
  type Manifest,
  type Put,
  type Rollout,
  type Rule,
  type Want,
} from "@mesh/protocol";
import type { AssignerSnapshot, HaveRecord } from "./snapshot.js";

/** What the rules of a module's cells read of its rollout. */
export interface RolloutPlan {
  /** Every node the rollout reaches, in the order it reaches them. */
  readonly nodes: readonly string[];
  /** The record as it stands after this pass (written when it differs from the one before). */
  readonly record: Rollout;
  /** Nodes allowed the build now. */
  readonly allowed: ReadonlySet<string>;
  /** The wave of each node not yet allowed, for its reason. */
  readonly waveOf: ReadonlyMap<string, number>;
  /** Failed or aborted: every node is set back from the build. */
  readonly halted: boolean;
}

/** A build the rules may want: finished, with its manifest and every archive's digest stored. */
export interface Usable {
  readonly build: Build;
  readonly manifest: Manifest;
  readonly manifestDigest: string;
}

export interface ModuleIndex {
  /** Usable builds by id. */
  readonly usable: ReadonlyMap<string, Usable>;
  /** The usable build of the newest candidate. */
  readonly newest: Usable | undefined;
  /** Every build by id, usable or not, for reasons. */
  readonly builds: ReadonlyMap<string, Build>;
}

/** Why nothing is wanted of a module on a node, for differences and logs. */
export interface Unwanted {
  readonly rule: Rule;
  readonly reason: string;
}

/** A proposal for one module on one node, before the composition check. */
export interface Proposal {
  readonly usable: Usable;
  readonly rule: Rule;
  readonly reason: string;
}

/** An ask a rule waits on: an operator's yes to a widening. */
export interface PendingAsk {
  readonly id: string;
  readonly module: string;
  readonly build: string;
  readonly what: string;
}

/**
 * What the rules so far decided for one cell: nothing yet (`open`, with notes a later reason
 * carries), a proposal, or nothing wanted. A `none` ends the chain for the cell.
 */
export type Decision =
  | { readonly kind: "open"; readonly notes: readonly string[] }
  | { readonly kind: "want"; readonly proposal: Proposal; readonly ask?: PendingAsk }
  | { readonly kind: "none"; readonly unwanted: Unwanted; readonly ask?: PendingAsk };

export const OPEN: Decision = { kind: "open", notes: [] };

/** Everything a rule reads about one module on one node. */
export interface Cell {
  readonly snapshot: AssignerSnapshot;
  readonly node: string;
  readonly module: string;
  /** `<node>.<module>`. */
  readonly key: string;
  /** `all.<module>`: where an assignment, put or retry on every node is kept. */
  readonly allKey: string;
  readonly index: ModuleIndex | undefined;
  /** Whether the node has been present. */
  readonly present: boolean;
  /** The want the assigner wrote before, as it stands. */
  readonly previous: Want | undefined;
  /** The builds marked failing on this node (see `marksOf`). */
  readonly marks: ReadonlySet<string>;
  /** The module's rollout this pass (see ./rollout-plan.ts), when it has one. */
  readonly rollout: RolloutPlan | undefined;
}

/** The facts of one cell, for the rules. */
export function cellOf(
  snapshot: AssignerSnapshot,
  index: ReadonlyMap<string, ModuleIndex>,
  node: string,
  module: string,
  allKey = targetModuleKey({ all: true }, module),
  rollouts?: ReadonlyMap<string, RolloutPlan>,
): Cell {
  const key = nodeModuleKey(node, module);
  const have = snapshot.have.get(key);
  return {
    snapshot,
    node,
    module,
    key,
    allKey,
    index: index.get(module),
    present: snapshot.presence.has(node),
    previous: snapshot.own.wants.get(key),
    marks: have === undefined ? NO_MARKS : marksOf(have, liftedAt(snapshot, key, allKey)),
    rollout: rollouts?.get(module),
  };
}

const NO_MARKS: ReadonlySet<string> = new Set();

/**
 * The builds marked failing on a node (decision 0034): a build is marked when its latest report
 * there, healthy or failing, is failing, and that report came after the last retry (its revision
 * is above the retry's). A new build has no mark; a healthy run of the build lifts it.
 */
export function marksOf(record: HaveRecord | undefined, lifted = 0): Set<string> {
  const out = new Set<string>();
  for (const h of record?.history ?? []) {
    if (h.build === undefined) continue;
    if (h.health === "healthy") out.delete(h.build);
    else if (h.health === "failing" && (h.revision ?? Number.MAX_SAFE_INTEGER) > lifted) {
      out.add(h.build);
    }
  }
  return out;
}

/** The have revision up to which an operator's retry lifted the marks of a cell (its keys given). */
export function liftedAt(snapshot: AssignerSnapshot, key: string, allKey: string): number {
  if (snapshot.retries.size === 0) return 0;
  const own = snapshot.retries.get(key)?.haveRevision ?? 0;
  const all = snapshot.retries.get(allKey)?.haveRevision ?? 0;
  return Math.max(own, all);
}

/** The put that stands for a cell: the node's own before `all`, with where it was put. */
export function putOf(cell: Cell): { put: Put; where: string } | undefined {
  const { puts } = cell.snapshot;
  if (puts.size === 0) return undefined;
  const own = puts.get(cell.key);
  if (own !== undefined) return { put: own, where: cell.node };
  const all = puts.get(cell.allKey);
  return all === undefined ? undefined : { put: all, where: "all nodes" };
}

/** Every module's builds, indexed once per pass. */
export function indexModules(snapshot: AssignerSnapshot): Map<string, ModuleIndex> {
  const byModule = new Map<string, Build[]>();
  for (const build of snapshot.builds.values()) {
    const list = byModule.get(build.module) ?? [];
    list.push(build);
    byModule.set(build.module, list);
  }
  const out = new Map<string, ModuleIndex>();
  for (const [module, list] of byModule) {
    const usable = new Map<string, Usable>();
    const builds = new Map<string, Build>();
    let newest: Usable | undefined;
    for (const build of list) {
      builds.set(build.build, build);
      const u = usableBuild(snapshot, build);
      if (u === undefined) continue;
      usable.set(build.build, u);
      if (newest === undefined || newer(build, newest.build)) newest = u;
    }
    out.set(module, { usable, builds, newest });
  }
  return out;
}

const newer = (a: Build, b: Build): boolean =>
  a.candidate > b.candidate || (a.candidate === b.candidate && a.build > b.build);

/** Rule 2: finished, its manifest stored, and every bundle of it carrying the digest the build stored. */
export function usableBuild(snapshot: AssignerSnapshot, build: Build): Usable | undefined {
  if (build.status !== "built" || build.manifestDigest === undefined) return undefined;
  const manifest = snapshot.manifests.get(build.manifestDigest);
  if (manifest === undefined || manifest.module !== build.module) return undefined;
  const stored = new Map(build.bundles.map((b) => [b.name, b.digest]));
  for (const bundle of manifest.bundles) {
    if (bundle.digest === undefined || stored.get(bundle.name) !== bundle.digest) return undefined;
  }
  return { build, manifest, manifestDigest: build.manifestDigest };
}

/** `all`, the target of every node, is never a node a pass decides. */
export const isNode = (name: string): boolean => name !== ALL_NODES;
