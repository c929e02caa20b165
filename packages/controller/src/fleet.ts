/**
 * What the controller knows of the fleet, indexed so that one input's change names the few nodes
 * it moves: wants by node, nodes by module and by manifest digest, readers by the owner they read.
 * Pure and in memory: the controller feeds it from its watches; `mesh compose` and the bench feed
 * it directly. Recomposition cost follows the nodes an input touches, not the fleet's size.
 */
import {
  parseNodeModuleKey,
  parseSecretKey,
  type Keeps,
  type Manifest,
  type Presence,
  type Want,
} from "@mesh/protocol";
import type { ManifestProblem, StateDeclaration } from "@mesh/core";

/** A manifest as the intake left it: usable, or refused with every problem. */
export type IntakeResult =
  | { readonly ok: true; readonly manifest: Manifest }
  | { readonly ok: false; readonly problems: readonly ManifestProblem[] | readonly string[] };

/** One node's inputs, read off the index. */
export interface NodeInputs {
  readonly node: string;
  readonly presence: Presence | undefined;
  /** Wanted modules by name, each with its want and its manifest as the intake left it. */
  readonly wanted: ReadonlyMap<
    string,
    { readonly want: Want; readonly manifest: IntakeResult | undefined }
  >;
}

export class Fleet {
  readonly #wants = new Map<string, Map<string, Want>>();
  readonly #manifests = new Map<string, IntakeResult>();
  readonly #presence = new Map<string, Presence>();
  readonly #keeps = new Map<string, Map<string, readonly StateDeclaration[]>>();
  readonly #secrets = new Set<string>();
  readonly #nodesByModule = new Map<string, Set<string>>();
  readonly #nodesByDigest = new Map<string, Set<string>>();
  /** Per module, how many nodes want each of its builds (by manifest digest). */
  readonly #digestsByModule = new Map<string, Map<string, number>>();
  readonly #readersByOwner = new Map<string, Set<string>>();
  readonly #dirty = new Set<string>();

  /** `mesh-wants.<node>.<module>`: a put (value) or a delete (undefined). */
  setWant(key: string, want: Want | undefined): void {
    const { node, module } = parseNodeModuleKey(key);
    let byModule = this.#wants.get(node);
    const before = byModule?.get(module);
    if (before !== undefined) count(this.#digestsByModule, module, before.manifestDigest, -1);
    if (want !== undefined) count(this.#digestsByModule, module, want.manifestDigest, 1);
    if (want === undefined) {
      if (before === undefined) return;
      byModule?.delete(module);
      if (byModule?.size === 0) this.#wants.delete(node);
      this.#nodesByModule.get(module)?.delete(node);
    } else {
      if (before !== undefined && JSON.stringify(before) === JSON.stringify(want)) return;
      if (byModule === undefined) {
        byModule = new Map();
        this.#wants.set(node, byModule);
      }
      byModule.set(module, want);
      index(this.#nodesByModule, module, node);
      index(this.#nodesByDigest, want.manifestDigest, node);
    }
    this.#dirty.add(node);
  }

  /** `mesh-manifests.<digest>`, as the intake left it. */
  setManifest(digest: string, manifest: IntakeResult | undefined): void {
    if (manifest === undefined) this.#manifests.delete(digest);
    else this.#manifests.set(digest, manifest);
    for (const node of this.#nodesByDigest.get(digest) ?? []) this.#dirty.add(node);
    if (manifest?.ok === true) this.#touchOwner(manifest.manifest.module);
  }

  /** `mesh-presence.<node>`. */
  setPresence(node: string, presence: Presence | undefined): void {
    const before = this.#presence.get(node);
    if (presence === undefined) this.#presence.delete(node);
    else this.#presence.set(node, presence);
    // A heartbeat moves only the time; the composition reads the key and the facts.
    if (
      before !== undefined &&
      presence !== undefined &&
      before.publicKey === presence.publicKey &&
      JSON.stringify(before.facts) === JSON.stringify(presence.facts)
    ) {
      return;
    }
    this.#dirty.add(node);
  }

  /** `mesh.keeps.<node>.<module>`: what a process says it keeps. */
  setKeeps(keeps: Keeps): void {
    let byNode = this.#keeps.get(keeps.module);
    if (byNode === undefined) {
      byNode = new Map();
      this.#keeps.set(keeps.module, byNode);
    }
    const before = byNode.get(keeps.node);
    if (before !== undefined && JSON.stringify(before) === JSON.stringify(keeps.states)) return;
    // Only the owner's states as grants read them reach a composition: a report that leaves
    // them as they were (a thousand nodes first saying the same) recomposes nothing.
    const statesBefore = JSON.stringify(this.ownerStates(keeps.module));
    byNode.set(keeps.node, keeps.states);
    if (JSON.stringify(this.ownerStates(keeps.module)) === statesBefore) return;
    this.#touchOwner(keeps.module);
  }

  /** `mesh-secrets.<module>.<name>` exists (true) or not. */
  setSecret(key: string, present: boolean): void {
    const { module } = parseSecretKey(key);
    if (present) this.#secrets.add(key);
    else this.#secrets.delete(key);
    for (const node of this.#nodesByModule.get(module) ?? []) this.#dirty.add(node);
  }

  /** Marks a node to be composed again (a retry after a failure, a start). */
  touch(node: string): void {
    this.#dirty.add(node);
  }

  /** The nodes whose inputs moved since the last call, sorted; the set is emptied. */
  takeDirty(): string[] {
    const out = [...this.#dirty].sort();
    this.#dirty.clear();
    return out;
  }

  get dirtyCount(): number {
    return this.#dirty.size;
  }

  /** Every node that has wants or presence. */
  nodes(): string[] {
    return [...new Set([...this.#wants.keys(), ...this.#presence.keys()])].sort();
  }

  presenceOf(node: string): Presence | undefined {
    return this.#presence.get(node);
  }

  /** One node's inputs; also notes which owners it reads, so their changes recompose it. */
  inputsOf(node: string): NodeInputs {
    const wanted = new Map<string, { want: Want; manifest: IntakeResult | undefined }>();
    for (const [module, want] of this.#wants.get(node) ?? []) {
      const manifest = this.#manifests.get(want.manifestDigest);
      wanted.set(module, { want, manifest });
      if (manifest?.ok === true) {
        for (const read of manifest.manifest.reads) {
          index(this.#readersByOwner, read.slice(0, read.indexOf("/")), node);
        }
      }
    }
    return { node, presence: this.#presence.get(node), wanted };
  }

  /**
   * The states `owner` keeps, as grants read them: a state is readable only where every wanted
   * build of the owner declares it readable and, once its processes said what they keep, they
   * say it too. Undefined when the owner is wanted nowhere and said nothing.
   */
  ownerStates(owner: string): StateDeclaration[] | undefined {
    const declared = new Map<string, boolean>();
    let known = false;
    for (const digest of this.#digestsByModule.get(owner)?.keys() ?? []) {
      const manifest = this.#manifests.get(digest);
      if (manifest?.ok !== true) continue;
      known = true;
      for (const s of manifest.manifest.states) {
        declared.set(s.name, (declared.get(s.name) ?? true) && s.readable);
      }
    }
    if (!known) return undefined;
    const kept = this.#keeps.get(owner);
    if (kept !== undefined && kept.size > 0) {
      const said = new Map<string, boolean>();
      for (const states of kept.values()) {
        for (const s of states) said.set(s.name, (said.get(s.name) ?? true) && s.readable);
      }
      for (const [name, readable] of declared) {
        declared.set(name, readable && said.get(name) === true);
      }
    }
    return [...declared].sort().map(([name, readable]) => ({ name, readable }));
  }

  hasSecret(module: string, name: string): boolean {
    return this.#secrets.has(`${module}.${name}`);
  }

  #touchOwner(owner: string): void {
    for (const node of this.#nodesByModule.get(owner) ?? []) this.#dirty.add(node);
    for (const node of this.#readersByOwner.get(owner) ?? []) this.#dirty.add(node);
  }
}

function count(
  map: Map<string, Map<string, number>>,
  key: string,
  digest: string,
  by: number,
): void {
  let counts = map.get(key);
  if (counts === undefined) {
    counts = new Map();
    map.set(key, counts);
  }
  const n = (counts.get(digest) ?? 0) + by;
  if (n > 0) counts.set(digest, n);
  else counts.delete(digest);
}

function index(map: Map<string, Set<string>>, key: string, node: string): void {
  let set = map.get(key);
  if (set === undefined) {
    set = new Set();
    map.set(key, set);
  }
  set.add(node);
}
