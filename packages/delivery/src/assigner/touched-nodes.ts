/**
 * Which nodes one change of a bucket the assigner reads can move: its own node, every node a
 * module's change reaches, or every node (ALL). It keeps the nodes each module has keys for, so
 * a module's change touches only those nodes, not the fleet.
 */
import { ALL_NODES, Bucket, type Ask } from "@mesh/protocol";
import { allKey, type Maps } from "./maps.js";

/** Every node: a change whose reach cannot be named node by node (and the assigner's first pass). */
export const ALL = Symbol("every node");
/** The nodes a change touches, or every node. */
export type Touched = Iterable<string> | typeof ALL;

/** The buckets whose keys are `<node>.<module>`: they say which nodes a module has. */
const NODE_MODULE_KEYED: ReadonlySet<string> = new Set([
  Bucket.have,
  Bucket.wants,
  Bucket.assignments,
  Bucket.puts,
  Bucket.retries,
  Bucket.differences,
]);

export class TouchedNodes {
  readonly #maps: Maps;
  /** Nodes each module has keys for. */
  readonly #moduleNodes = new Map<string, Set<string>>();

  constructor(maps: Maps) {
    this.#maps = maps;
  }

  /** Notes the node a `<node>.<module>` key names for its module (every change, also standing ones). */
  index(bucket: string, key: string): void {
    if (!NODE_MODULE_KEYED.has(bucket)) return;
    const [node, module] = key.split(".") as [string, string | undefined];
    if (module === undefined || node === ALL_NODES) return;
    const set = this.#moduleNodes.get(module) ?? new Set<string>();
    set.add(node);
    this.#moduleNodes.set(module, set);
  }

  /** The nodes one change touches: its own node, or every node a module's change reaches. */
  of(bucket: string, key: string): Touched {
    const nodes = new Set<string>();
    let all = false;
    const touchModule = (module: string): void => {
      const allKeyOf = allKey(module);
      if (
        allKeyOf === undefined ||
        this.#maps.assignments.has(allKeyOf) ||
        this.#maps.puts.has(allKeyOf)
      ) {
        all = true;
        return;
      }
      for (const n of this.#moduleNodes.get(module) ?? []) nodes.add(n);
    };
    const first = key.split(".")[0] as string;
    switch (bucket) {
      case Bucket.presence:
      case Bucket.composed:
      case Bucket.compositions:
      case Bucket.have:
      case Bucket.wants:
      case Bucket.differences:
        nodes.add(first);
        break;
      case Bucket.assignments:
      case Bucket.puts:
      case Bucket.retries:
        if (first === ALL_NODES) all = true;
        else nodes.add(first);
        break;
      case Bucket.modules:
      case Bucket.candidates:
      case Bucket.builds:
      case Bucket.rolloutPolicies:
      case Bucket.rolloutSteers:
      case Bucket.rollouts:
      case Bucket.configRollouts:
      case Bucket.configWaves:
        touchModule(first);
        break;
      case Bucket.config: // `<module>.<key>.<node>`: that node; mesh-wide: the module's nodes
        if (key.split(".").length === 3) nodes.add(key.split(".")[2] as string);
        else touchModule(first);
        break;
      case Bucket.manifests:
        for (const b of this.#maps.builds.values())
          if (b.manifestDigest === key) touchModule(b.module);
        break;
      case Bucket.answers:
      case Bucket.asks: {
        const ask: Ask | undefined = this.#maps.own.asks.get(key);
        if (ask === undefined) all = true;
        else touchModule(ask.module);
        break;
      }
      default:
        all = true;
    }
    return all ? ALL : nodes;
  }
}
