/**
 * The assigner's rules (DESIGN.md "Delivery", seeds/003): from a snapshot of the buckets, what
 * each node should run, the composition check of each node's wanted set, every difference
 * between want, composed and have, and the asks an operator must answer. Pure: the same snapshot
 * gives the same result, whatever order its maps were filled in; the shell writes `writes` and
 * says `conditions`, nothing else.
 *
 * The six rules, in order, for each node and module:
 *  1. placed    — an assignment (`<node>.<module>` or `all.<module>`) and a node that has been present;
 *  2. built     — only builds that finished, whose resolved manifest is stored with every archive's digest;
 *  3. newest    — the build of the newest candidate that built;
 *  4. put       — an operator's put (the node's own before `all`) pins a named build;
 *  5. set-back  — a build the node reported failing is not wanted there again (unless put): the node
 *                 goes back to the build it last ran healthy, and a condition says so;
 *  6. checked   — a build that widens what the module may read, call or hold waits for an operator's
 *                 yes; a wanted set the composition check refuses is not advanced to (the previous
 *                 want stands, with the reason).
 *
 * A pass may be scoped to some nodes (`options.nodes`): the shell passes the nodes a change
 * touches, so the cost of a pass grows with the change, not the fleet. A pass over every node
 * gives the same decisions for those nodes.
 */
import { createHash } from "node:crypto";
import {
  ALL_NODES,
  Bucket,
  ObjectStore,
  type Ask,
  type Build,
  type CompositionVerdict,
  type Difference,
  type Have,
  type Manifest,
  type Rule,
  type Want,
} from "@mesh/protocol";
import { compose, type Composition } from "../composition.js";
import { canonicalJson } from "../fingerprint.js";
import type { AssignerSnapshot } from "./snapshot.js";

export interface AssignOptions {
  /** Decide only these nodes; every node the snapshot knows when omitted (a full pass). */
  readonly nodes?: Iterable<string>;
}

/** One write the shell makes: a value to put, or undefined to delete the key. */
export type AssignerWrite =
  | { readonly bucket: typeof Bucket.wants; readonly key: string; readonly value: Want | undefined }
  | {
      readonly bucket: typeof Bucket.compositions;
      readonly key: string;
      readonly value: CompositionVerdict | undefined;
    }
  | {
      readonly bucket: typeof Bucket.differences;
      readonly key: string;
      readonly value: Difference | undefined;
    }
  | { readonly bucket: typeof Bucket.asks; readonly key: string; readonly value: Ask | undefined };

/** A condition for the operator channel, said as the assigner. */
export interface AssignerCondition {
  readonly name: string;
  readonly level: "info" | "warning" | "error";
  readonly message: string;
  readonly node: string;
}

/** Why nothing is wanted of a module on a node, for differences and logs. */
export interface Unwanted {
  readonly rule: Rule;
  readonly reason: string;
}

export interface AssignResult {
  /** The nodes decided. */
  readonly nodes: readonly string[];
  /** `<node>.<module>` → the want decided (only where something is wanted). */
  readonly wants: ReadonlyMap<string, Want>;
  /** `<node>.<module>` → why nothing is wanted, for every module considered and not wanted. */
  readonly unwanted: ReadonlyMap<string, Unwanted>;
  readonly compositions: ReadonlyMap<string, CompositionVerdict>;
  readonly differences: ReadonlyMap<string, Difference>;
  /** Every ask that stands after this pass (outside the scope too). */
  readonly asks: ReadonlyMap<string, Ask>;
  /** Only what differs from what stands (`snapshot.own`): a second pass over the result writes nothing. */
  readonly writes: readonly AssignerWrite[];
  /** For the set-backs and refused checks this pass wrote. */
  readonly conditions: readonly AssignerCondition[];
}

/** A build the rules may want: finished, with its manifest and every archive's digest stored. */
interface Usable {
  readonly build: Build;
  readonly manifest: Manifest;
  readonly manifestDigest: string;
}

interface ModuleIndex {
  /** Usable builds by id. */
  readonly usable: ReadonlyMap<string, Usable>;
  /** The usable build of the newest candidate. */
  readonly newest: Usable | undefined;
  /** Every build by id, usable or not, for reasons. */
  readonly builds: ReadonlyMap<string, Build>;
}

/** A proposal for one module on one node, before the composition check. */
interface Proposal {
  readonly usable: Usable;
  readonly rule: Rule;
  readonly reason: string;
}

export function assign(snapshot: AssignerSnapshot, options: AssignOptions = {}): AssignResult {
  const index = indexModules(snapshot);
  const full = options.nodes === undefined;
  const extraModules = full ? modulesByNode(snapshot) : new Map<string, Set<string>>();
  const nodes = full
    ? [...allNodes(snapshot)].sort()
    : [...new Set(options.nodes)].filter((n) => n !== ALL_NODES).sort();
  const scope = new Set(nodes);
  const moduleNames = new Set<string>([...snapshot.registrations.keys(), ...index.keys()]);

  const wants = new Map<string, Want>();
  const unwanted = new Map<string, Unwanted>();
  const compositions = new Map<string, CompositionVerdict>();
  const differences = new Map<string, Difference>();
  const waiting = new Map<
    string,
    { module: string; build: string; what: string; nodes: Set<string> }
  >();
  const writes: AssignerWrite[] = [];
  const conditions: AssignerCondition[] = [];
  const usableOf = (module: string, build: string | undefined): Usable | undefined =>
    build === undefined ? undefined : index.get(module)?.usable.get(build);

  for (const node of nodes) {
    const modules = new Set(moduleNames);
    for (const m of Object.keys(snapshot.composed.get(node)?.modules ?? {})) modules.add(m);
    for (const m of extraModules.get(node) ?? []) modules.add(m);
    const sorted = [...modules].sort();
    const presence = snapshot.presence.get(node);
    const proposals = new Map<string, Proposal>();

    for (const module of sorted) {
      const key = `${node}.${module}`;
      const decided = decideModule({
        snapshot,
        node,
        module,
        index: index.get(module),
        present: presence !== undefined,
      });
      if ("none" in decided) {
        unwanted.set(key, decided.none);
        continue;
      }
      let proposal = decided.proposal;
      // Rule 6, first half: a newer build that widens what the module may read, call or hold
      // waits for an operator's yes. A put is the operator's own choice and a set-back goes
      // back to a build that ran, so only an advance to the newest asks.
      const previous = snapshot.own.wants.get(key);
      const before = usableOf(module, previous?.build);
      if (
        proposal.rule === "newest" &&
        before !== undefined &&
        before.build.build !== proposal.usable.build.build
      ) {
        const widened = widening(before.manifest, proposal.usable.manifest);
        if (widened.length > 0) {
          const id = askId(module, proposal.usable.build.build, widened);
          const answer = snapshot.answers.get(id)?.answer;
          const what = `${module} build ${proposal.usable.build.build} widens what it may ${widened.join(", ")}; answer yes to let it run`;
          if (answer === "yes") {
            proposal = {
              ...proposal,
              reason: `${proposal.reason}; it widens (${widened.join(", ")}) and ask ${id} was answered yes`,
            };
          } else {
            const ask = waiting.get(id) ?? {
              module,
              build: proposal.usable.build.build,
              what,
              nodes: new Set<string>(),
            };
            ask.nodes.add(node);
            waiting.set(id, ask);
            const held = failedOn(snapshot, node, module).has(before.build.build)
              ? undefined
              : before;
            const why =
              answer === "no"
                ? `ask ${id} was answered no: ${module} build ${proposal.usable.build.build} widens what it may ${widened.join(", ")}`
                : `${module} build ${proposal.usable.build.build} widens what it may ${widened.join(", ")} and waits for a yes to ask ${id}`;
            if (held === undefined) {
              unwanted.set(key, { rule: "checked", reason: why });
              continue;
            }
            proposal = {
              usable: held,
              rule: "checked",
              reason: `${why}; the previous want ${held.build.build} stands`,
            };
          }
        }
      }
      proposals.set(module, proposal);
    }

    // Rule 6, second half: the composition check of the node's whole wanted set.
    const resolution = (set: ReadonlyMap<string, Proposal>): Composition =>
      compose({
        node,
        modules: [...set.values()].map((p) => p.usable.manifest),
        account: presence?.facts.account,
        accountHome: presence?.facts.accountHome,
        adopted: presence?.facts.adopted,
        artifacts: { store: ObjectStore.artifacts },
      });
    let final = proposals;
    let composition = proposals.size === 0 ? undefined : resolution(proposals);
    const refusedReasons: string[] = [];
    if (composition !== undefined && !composition.ok) {
      const refusal = composition;
      refusedReasons.push(...refusal.refusals.map((r) => `${r.reason}; ${r.fix}`));
      const changed = [...proposals.entries()]
        .filter(([m, p]) => snapshot.own.wants.get(`${node}.${m}`)?.build !== p.usable.build.build)
        .map(([m]) => m);
      const named = new Set(refusal.refusals.map((r) => r.module));
      const blame = refusal.refusals.every((r) => r.module !== undefined)
        ? changed.filter((m) => named.has(m))
        : changed;
      const attempts =
        blame.length > 0 && blame.length < changed.length ? [blame, changed] : [changed];
      for (const revert of attempts) {
        final = new Map(proposals);
        for (const module of revert) {
          const proposed = proposals.get(module) as Proposal;
          const why = `the composition check refuses ${module} build ${proposed.usable.build.build} on ${node} (${refusal.refusals
            .map((r) => r.reason)
            .join("; ")})`;
          const prev = usableOf(module, snapshot.own.wants.get(`${node}.${module}`)?.build);
          if (prev === undefined || failedOn(snapshot, node, module).has(prev.build.build)) {
            final.delete(module);
            unwanted.set(`${node}.${module}`, {
              rule: "checked",
              reason: `${why}; nothing was wanted before`,
            });
          } else {
            final.set(module, {
              usable: prev,
              rule: "checked",
              reason: `${why}; the previous want ${prev.build.build} stands`,
            });
          }
        }
        composition = final.size === 0 ? undefined : resolution(final);
        if (composition === undefined || composition.ok) break;
      }
    }

    for (const [module, proposal] of final) {
      const want: Want = {
        build: proposal.usable.build.build,
        manifestDigest: proposal.usable.manifestDigest,
        fingerprint: composition?.ok === true ? (composition.moduleFingerprints[module] ?? "") : "",
        rule: proposal.rule,
        reason: proposal.reason,
      };
      wants.set(`${node}.${module}`, want);
    }

    const verdict: CompositionVerdict | undefined =
      composition === undefined && refusedReasons.length === 0
        ? undefined
        : {
            node,
            verdict: composition === undefined || composition.ok ? "ok" : "refused",
            wanted: Object.fromEntries([...final].map(([m, p]) => [m, p.usable.build.build])),
            reasons: [
              ...refusedReasons.map((r) => `not advanced: ${r}`),
              ...(composition !== undefined && !composition.ok
                ? composition.refusals.map((r) => `${r.reason}; ${r.fix}`)
                : []),
            ],
          };
    if (verdict !== undefined) compositions.set(node, verdict);
    if (!sameValue(snapshot.own.compositions.get(node), verdict)) {
      writes.push({ bucket: Bucket.compositions, key: node, value: verdict });
      if (verdict !== undefined && verdict.reasons.length > 0) {
        conditions.push({
          name: conditionName("refused", node),
          level: "warning",
          message: `the composition check on ${node} refused: ${verdict.reasons.join(" | ")}`,
          node,
        });
      }
    }

    for (const module of sorted) {
      const key = `${node}.${module}`;
      const want = wants.get(key);
      if (!sameValue(snapshot.own.wants.get(key), want)) {
        writes.push({ bucket: Bucket.wants, key, value: want });
        if (want?.rule === "set-back") {
          conditions.push({
            name: conditionName("set-back", `${node}-${module}`),
            level: "warning",
            message: want.reason,
            node,
          });
        }
      }
      const difference = differenceOf(snapshot, node, module, want, unwanted.get(key));
      if (difference !== undefined) differences.set(key, difference);
      if (!sameValue(snapshot.own.differences.get(key), difference)) {
        writes.push({ bucket: Bucket.differences, key, value: difference });
      }
    }
  }

  // Asks: the nodes outside the scope keep their place in an ask; those inside are as decided.
  const asks = new Map<string, Ask>();
  const ids = new Set([...snapshot.own.asks.keys(), ...waiting.keys()]);
  for (const id of [...ids].sort()) {
    const existing = snapshot.own.asks.get(id);
    const pending = waiting.get(id);
    const keep = full ? [] : (existing?.nodes ?? []).filter((n) => !scope.has(n));
    const askNodes = [...new Set([...keep, ...(pending?.nodes ?? [])])].sort();
    const source = pending ?? existing;
    const ask: Ask | undefined =
      askNodes.length === 0 || source === undefined
        ? undefined
        : {
            id,
            what: source.what,
            module: source.module,
            build: source.build,
            nodes: askNodes,
            at: existing?.at ?? snapshot.now,
          };
    if (ask !== undefined) asks.set(id, ask);
    if (!sameValue(existing, ask)) writes.push({ bucket: Bucket.asks, key: id, value: ask });
  }

  return { nodes, wants, unwanted, compositions, differences, asks, writes, conditions };
}

/** Rules 1 to 5 for one module on one node. */
function decideModule(input: {
  snapshot: AssignerSnapshot;
  node: string;
  module: string;
  index: ModuleIndex | undefined;
  present: boolean;
}): { proposal: Proposal } | { none: Unwanted } {
  const { snapshot, node, module, index } = input;
  // 1. placed
  const assignment =
    snapshot.assignments.get(`${node}.${module}`) ??
    snapshot.assignments.get(`${ALL_NODES}.${module}`);
  if (assignment === undefined) {
    return {
      none: { rule: "placed", reason: `no assignment places ${module} on ${node} or on all nodes` },
    };
  }
  if (!input.present) {
    return {
      none: {
        rule: "placed",
        reason: `${module} is assigned to ${node}, but ${node} has not been present`,
      },
    };
  }
  // 2. built
  if (index === undefined || index.usable.size === 0) {
    const failed = [...(index?.builds.values() ?? [])].filter((b) => b.status === "failed").length;
    return {
      none: {
        rule: "built",
        reason:
          `no build of ${module} has finished with its manifest and archives stored` +
          (failed > 0 ? ` (${failed} failed: see \`mesh builds ${module}\`)` : ""),
      },
    };
  }
  // 4. put (before 3, since it overrides it; the put is checked to be built)
  const put = snapshot.puts.get(`${node}.${module}`) ?? snapshot.puts.get(`${ALL_NODES}.${module}`);
  let putNote = "";
  if (put !== undefined) {
    const usable = index.usable.get(put.build);
    const where = snapshot.puts.has(`${node}.${module}`) ? node : "all nodes";
    if (usable !== undefined) {
      return {
        proposal: {
          usable,
          rule: "put",
          reason: `${put.by} put ${module} on ${where} to build ${put.build}${put.why === "" ? "" : `: ${put.why}`}`,
        },
      };
    }
    const status = index.builds.get(put.build)?.status;
    putNote = `; the put to build ${put.build} is not honoured: ${status === undefined ? "no such build" : `it is ${status}`}`;
  }
  // 3. newest
  const newest = index.newest as Usable;
  const newer = [...index.builds.values()].filter(
    (b) => b.candidate > newest.build.candidate && b.status !== "built",
  );
  const skipped =
    newer.length === 0
      ? ""
      : `; newer: ${newer
          .map((b) => `${b.build} ${b.status}`)
          .sort()
          .join(", ")}`;
  const newestReason = `the newest build of ${module}, of candidate ${newest.build.candidate}${skipped}${putNote}`;
  // 5. set-back
  const failing = failedOn(snapshot, node, module);
  if (!failing.has(newest.build.build)) {
    return { proposal: { usable: newest, rule: "newest", reason: newestReason } };
  }
  const history = snapshot.have.get(`${node}.${module}`)?.history ?? [];
  for (let i = history.length - 1; i >= 0; i--) {
    const h = history[i] as Have;
    if (h.health !== "healthy" || h.build === undefined || failing.has(h.build)) continue;
    const usable = index.usable.get(h.build);
    if (usable === undefined) continue;
    return {
      proposal: {
        usable,
        rule: "set-back",
        reason: `${node} reported ${module} build ${newest.build.build} failing, so it is set back to build ${h.build}, the build it last ran healthy`,
      },
    };
  }
  return {
    none: {
      rule: "set-back",
      reason: `${node} reported ${module} build ${newest.build.build} failing and ran no other stored build healthy; nothing is wanted until a newer build or a put`,
    },
  };
}

/** The builds a node reported failing for a module, from have's kept history. */
function failedOn(snapshot: AssignerSnapshot, node: string, module: string): Set<string> {
  const out = new Set<string>();
  for (const h of snapshot.have.get(`${node}.${module}`)?.history ?? []) {
    if (h.health === "failing" && h.build !== undefined) out.add(h.build);
  }
  return out;
}

function differenceOf(
  snapshot: AssignerSnapshot,
  node: string,
  module: string,
  want: Want | undefined,
  unwanted: Unwanted | undefined,
): Difference | undefined {
  const composed = snapshot.composed.get(node)?.modules?.[module]?.build;
  const have = snapshot.have.get(`${node}.${module}`)?.current;
  const haveBuild = have === undefined || have.health === "stopped" ? undefined : have.build;
  const reasons: string[] = [];
  if (want === undefined) {
    if (composed !== undefined || haveBuild !== undefined) {
      reasons.push(
        `nothing is wanted (${unwanted?.reason ?? "not placed"}), yet ${composed !== undefined ? `${composed} is composed` : `${node} runs ${haveBuild ?? ""}`}`,
      );
    }
  } else {
    if (composed !== want.build) {
      reasons.push(
        `wanted ${want.build}, composed ${composed ?? "nothing"}: the controller has not composed the want yet`,
      );
    }
    if (haveBuild !== want.build) {
      reasons.push(
        `wanted ${want.build}, ${node} has ${haveBuild ?? "nothing"}: the node has not applied it yet`,
      );
    }
  }
  if (have?.health === "failing") {
    reasons.push(
      `${node} reports ${have.build ?? "it"} failing${have.lastError === undefined ? "" : `: ${have.lastError}`}`,
    );
  }
  if (reasons.length === 0) return undefined;
  return {
    ...(want === undefined ? {} : { want: want.build }),
    ...(composed === undefined ? {} : { composed }),
    ...(have?.build === undefined ? {} : { have: have.build }),
    reasons,
  };
}

/** What a new manifest may read, call or hold that the old one may not, sorted. */
export function widening(before: Manifest, after: Manifest): string[] {
  const out: string[] = [];
  const had = (list: readonly string[]) => new Set(list);
  const reads = had(before.reads);
  for (const r of after.reads) if (!reads.has(r)) out.push(`read ${r}`);
  const calls = had(before.calls);
  for (const c of after.calls) if (!calls.has(c)) out.push(`call ${c}`);
  const secrets = had(Object.keys(before["own-secrets"]));
  for (const s of Object.keys(after["own-secrets"])) if (!secrets.has(s)) out.push(`hold ${s}`);
  return out.sort();
}

/** The id of the ask about one widening: the same widening of the same build always has the same id. */
export function askId(module: string, build: string, widened: readonly string[]): string {
  const digest = createHash("sha256")
    .update(canonicalJson({ module, build, widened: [...widened].sort() }))
    .digest("hex");
  return `w-${digest.slice(0, 20)}`;
}

/** A condition name within the name rule: the readable one when it fits, a digest otherwise. */
function conditionName(kind: string, about: string): string {
  const readable = `${kind}-${about}`;
  return /^[a-z][a-z0-9-]{0,62}$/.test(readable)
    ? readable
    : `${kind}-${createHash("sha256").update(about).digest("hex").slice(0, 16)}`;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonicalJson(a) === canonicalJson(b);
}

function indexModules(snapshot: AssignerSnapshot): Map<string, ModuleIndex> {
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
      if (
        newest === undefined ||
        build.candidate > newest.build.candidate ||
        (build.candidate === newest.build.candidate && build.build > newest.build.build)
      ) {
        newest = u;
      }
    }
    out.set(module, { usable, builds, newest });
  }
  return out;
}

/** Rule 2: finished, its manifest stored, and every bundle of it carrying the digest the build stored. */
function usableBuild(snapshot: AssignerSnapshot, build: Build): Usable | undefined {
  if (build.status !== "built" || build.manifestDigest === undefined) return undefined;
  const manifest = snapshot.manifests.get(build.manifestDigest);
  if (manifest === undefined || manifest.module !== build.module) return undefined;
  const stored = new Map(build.bundles.map((b) => [b.name, b.digest]));
  for (const bundle of manifest.bundles) {
    if (bundle.digest === undefined || stored.get(bundle.name) !== bundle.digest) return undefined;
  }
  return { build, manifest, manifestDigest: build.manifestDigest };
}

/** Every node a full pass decides: present ones, and those the assigner wrote something for. */
function allNodes(snapshot: AssignerSnapshot): Set<string> {
  const out = new Set<string>(snapshot.presence.keys());
  for (const key of snapshot.own.wants.keys()) out.add(key.split(".")[0] as string);
  for (const key of snapshot.own.differences.keys()) out.add(key.split(".")[0] as string);
  for (const key of snapshot.own.compositions.keys()) out.add(key);
  for (const key of snapshot.composed.keys()) out.add(key);
  for (const ask of snapshot.own.asks.values()) for (const n of ask.nodes) out.add(n);
  return out;
}

/** The modules each node has keys for, so a full pass also clears wants of modules gone from the mesh. */
function modulesByNode(snapshot: AssignerSnapshot): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (key: string): void => {
    const [node, module] = key.split(".") as [string, string | undefined];
    if (module === undefined || node === ALL_NODES) return;
    const set = out.get(node) ?? new Set<string>();
    set.add(module);
    out.set(node, set);
  };
  for (const key of snapshot.own.wants.keys()) add(key);
  for (const key of snapshot.own.differences.keys()) add(key);
  for (const key of snapshot.have.keys()) add(key);
  for (const key of snapshot.assignments.keys()) add(key);
  return out;
}

/** The bucket a write goes to, for the shell. */
export const ASSIGNER_WRITES = [
  Bucket.wants,
  Bucket.compositions,
  Bucket.differences,
  Bucket.asks,
] as const;
