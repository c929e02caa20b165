/**
 * Each credential's bus permissions, derived from the manifests and the layout (docs/design.md
 * "Credentials and the broker"). Pure: the broker calls these with what it read off the bus and
 * writes the result into the bus's user list.
 *
 * A module is granted what its manifest declares and nothing else: its own states read-write, the
 * states it reads (only where their owner keeps them readable), the tools it calls, its
 * conditions, its keeps and its inbox. The mesh's own principals get what their part of
 * docs/design.md needs; the controller alone is admin. The reasons for each list are in
 * docs/decisions/0020-permissions.md.
 */
import {
  ErrorCode,
  MESH_OWNER,
  MESH_PARTS,
  MeshError,
  RESERVED_MODULE_NAMES,
  RUNTIME_MODULE,
  Subject,
  keepsSubject,
  logsSubject,
  moduleConditionsWildcard,
  provisionChangedSubject,
  provisionModuleChangedSubject,
  provisionModuleSubject,
  provisionSubject,
  stateBucket,
  toolStatsSubject,
  type Manifest,
  type Permissions,
} from "@mesh/protocol";
import {
  type Rights,
  callTool,
  inbox,
  kvRead,
  kvOwn,
  merge,
  publishTo,
  serveTools,
  subscribeTo,
  toPermissions,
} from "./permissions/rights.js";

export { isAllowed, subjectMatches, type SubjectAction } from "./permissions/match.js";
export { allowedModules, mcpGrant, mcpPrincipal } from "./permissions/mcp.js";
import { meshResourceRights } from "./permissions/parts.js";
export { meshResourceRights, partGrant, type PartManifest } from "./permissions/parts.js";
export {
  buildGrant,
  controllerGrant,
  hostGrant,
  operatorGrant,
  viewGrant,
  VIEW_CONDITION_MODULE,
  renewalGrant,
} from "./permissions/principals.js";

/** A state as its owner declares it (a manifest's `states`, or a `mesh.keeps` message's). */
export interface StateDeclaration {
  readonly name: string;
  readonly readable: boolean;
}

/** What one owner keeps: its manifest (or anything with `states`), or the states themselves. */
export type OwnerStates =
  { readonly states: readonly StateDeclaration[] } | readonly StateDeclaration[];

/** Every owner a read may name, by module name. */
export type Owners = ReadonlyMap<string, OwnerStates> | Readonly<Record<string, OwnerStates>>;

/** The parts of a manifest a module's grant is derived from (`writes`: a mesh part's only). */
export type GrantManifest = Pick<Manifest, "module" | "states" | "reads" | "calls"> &
  Partial<Pick<Manifest, "writes">>;

/** The parts of a manifest the runtime's grant is derived from: also whether it has tools. */
export type ServedManifest = GrantManifest & Pick<Manifest, "bundles">;

/** Why a declared read was not granted. */
export const ReadRefusal = {
  /** No owner by that name is known: not registered, or its manifest is not read yet. */
  unknownModule: "unknown-module",
  /** The owner does not declare a state by that name. */
  unknownState: "unknown-state",
  /** The owner declares the state but does not keep it readable. */
  notReadable: "not-readable",
} as const;
export type ReadRefusal = (typeof ReadRefusal)[keyof typeof ReadRefusal];

/**
 * A declaration that was not granted. The grant is still good (it holds everything else); the
 * broker says these to the operator rather than refusing the whole credential, since an owner
 * that is registered later or makes a state readable later turns them into grants.
 */
export interface GrantProblem {
  /** The module whose declaration it is. */
  readonly module: string;
  /** The read as declared: `<module>/<state>`. */
  readonly read: string;
  readonly reason: ReadRefusal;
  /** What failed, the value, the state, and what to do. */
  readonly message: string;
}

/** A grant derived from manifests, and what in them could not be granted. */
export interface DerivedGrant {
  readonly permissions: Permissions;
  /** Sorted by module, then read. */
  readonly problems: readonly GrantProblem[];
}

/**
 * The runtime's grant. Its `allowResponses` is `{ max }` with one reply per service it runs:
 * every service on its connection subscribes to `$SRV.PING`, `$SRV.INFO` and `$SRV.STATS`, so
 * one mesh-wide discovery request draws one reply per served module, and with the default max
 * of 1 the server drops all but the first (verified on 2.9.10: `mesh tools` would list one
 * module per node).
 */
export type RuntimeGrant = DerivedGrant;

// ---------------------------------------------------------------------------------------------
// Modules

/**
 * The credential of a module's process on `node`: its own states read-write, the states it reads
 * read-only where their owner keeps them readable, requests to the tools it calls on any node,
 * its conditions, its keeps, asking its node's host for its own values (and hearing when they
 * move), and its inbox. A read that cannot be granted is left out and
 * returned as a problem.
 *
 * `owners` holds the other modules' states (their manifests, or what they said they keep); the
 * module's own manifest answers reads of its own states.
 *
 * Throws INVALID_NAME for a node that is not a name, or a module named after one of the mesh's
 * principals or the runtime: such a credential would share their inbox. The runtime's
 * credential comes from {@link runtimeGrant}.
 */
export function moduleGrant(input: {
  readonly node: string;
  readonly manifest: GrantManifest & Partial<Pick<Manifest, "bundles" | "processes">>;
  readonly owners: Owners;
}): DerivedGrant {
  const { node, manifest, owners } = input;
  refuseReserved(manifest.module, { runtime: "refused" });
  const own = moduleRights(node, manifest, owners);
  // Its own process asks its node's host for its own values, and hears when they move.
  const provision = merge(
    publishTo(provisionModuleSubject(node, manifest.module)),
    subscribeTo(provisionModuleChangedSubject(node, manifest.module)),
  );
  // A python or go module's tools are served by its own process (decision 0161): its own
  // module's tool subjects on its own node, and their discovery, as the runtime serves them.
  const tools = processServesTools(manifest) ? [serveTools(node, manifest.module)] : [];
  return {
    permissions: toPermissions(
      merge(own.rights, provision, ...tools, inbox(node, manifest.module)),
    ),
    problems: sortProblems(own.problems),
  };
}

/**
 * The credential of `node`'s tool runtime (module `node-tools`). It serves exactly the tools of
 * the served modules on its own node (their endpoints, `$SRV` discovery, replies), asks its own
 * node's provisioner, and says its own conditions.
 *
 * Module code runs inside the runtime and reaches the bus only through it (its worker has no
 * connection of its own), so the runtime also holds what each served module declares: its states,
 * reads, calls, conditions and keeps, as {@link moduleGrant} derives them. The bus cannot tell
 * those modules apart on one connection; the runtime does, by which worker asked (docs/design.md
 * "The runtime").
 *
 * `modules` may be every manifest wanted on the node: only modules with a tools bundle (one that
 * `loads` something) run in the runtime, so only they are served and granted. The runtime's own
 * manifest, when it is among them, is granted as its own module whether it has tools or not.
 */
export function runtimeGrant(input: {
  readonly node: string;
  readonly modules: readonly ServedManifest[];
  readonly owners: Owners;
}): RuntimeGrant {
  const { node, modules, owners } = input;
  const parts: Rights[] = [
    publishTo(provisionSubject(node), moduleConditionsWildcard(RUNTIME_MODULE)),
    // Replies to every caller's inbox, and not only by the server's response permissions:
    // nats-server 2.9 forgets those on every reload of its users (any composition change in the
    // fleet), and a call in flight then could not be answered (docs/security.md).
    publishTo(`${Subject.inboxRoot}.>`),
    subscribeTo(provisionChangedSubject(node)),
    inbox(node, RUNTIME_MODULE),
  ];
  const problems: GrantProblem[] = [];
  const services = new Set<string>();
  for (const manifest of modules) {
    const tools = hasTools(manifest);
    if (!tools && manifest.module !== RUNTIME_MODULE) continue;
    refuseReserved(manifest.module, { runtime: "allowed" });
    if (tools) {
      parts.push(serveTools(node, manifest.module));
      // What its tools' code logs (ctx.log) is filed under the module, as its tools' lines.
      parts.push(publishTo(logsSubject(node, manifest.module)));
      // What it counted of the module's calls (decision 0172): its own node's subject only.
      parts.push(publishTo(toolStatsSubject(node, manifest.module)));
      services.add(manifest.module);
    }
    const declared = moduleRights(node, manifest, owners);
    parts.push(declared.rights);
    problems.push(...declared.problems);
  }
  const permissions = toPermissions(merge(...parts));
  return {
    permissions:
      services.size > 1 ? { ...permissions, allowResponses: { max: services.size } } : permissions,
    problems: sortProblems(problems),
  };
}

/**
 * Whether a module's tools are served by its own process rather than the runtime: it has no
 * tools bundle, and a process of it runs a bundle in a language the runtime does not load
 * (python, go, prebuilt) — what `mesh_sdk` and the Go SDK serve (decision 0161).
 */
export function processServesTools(
  manifest: Partial<Pick<Manifest, "bundles" | "processes">>,
): boolean {
  const bundles = manifest.bundles ?? [];
  if (hasTools({ bundles })) return false;
  return (manifest.processes ?? []).some((p) => {
    const bundle = bundles.find((b) => b.name === p.bundle);
    return bundle !== undefined && bundle.language !== "typescript";
  });
}

/** A bundle with `loads` is a tools bundle (docs/design.md "Manifests"). */
const hasTools = (manifest: Pick<Manifest, "bundles">): boolean =>
  manifest.bundles.some((bundle) => (bundle.loads?.length ?? 0) > 0);

/** What a module's declarations grant, without its inbox (the runtime has one inbox for all). */
function moduleRights(
  node: string,
  manifest: GrantManifest,
  owners: Owners,
): { rights: Rights; problems: GrantProblem[] } {
  const module = manifest.module;
  const parts: Rights[] = [
    // Every module may say conditions and what it keeps; neither reaches anyone else's data.
    publishTo(moduleConditionsWildcard(module), keepsSubject(node, module)),
  ];
  for (const state of manifest.states) parts.push(kvOwn(stateBucket(module, state.name)));

  const problems: GrantProblem[] = [];
  // A mesh part names the mesh's own buckets (decision 0122): granted from the table, as a
  // part's principal was; the manifest check refuses such names in any other module's manifest.
  const part = MESH_PARTS.has(module);
  for (const [ref, direction] of [
    ...manifest.reads.map((r) => [r, "read"] as const),
    ...(manifest.writes ?? []).map((w) => [w, "write"] as const),
  ]) {
    if (splitRef(ref)[0] !== MESH_OWNER) continue;
    const rights = part ? meshResourceRights(ref, direction) : undefined;
    if (rights !== undefined) parts.push(rights);
    else
      problems.push({
        module,
        read: ref,
        reason: ReadRefusal.unknownModule,
        message: `${module} ${direction}s ${JSON.stringify(ref)}, which is not granted: only the mesh's parts (${[...MESH_PARTS].sort().join(", ")}) name the mesh's own buckets, and only those the mesh has; leave it out of ${module}'s manifest`,
      });
  }
  for (const read of manifest.reads) {
    const [owner, state] = splitRef(read);
    if (owner === MESH_OWNER) continue;
    // A module reads its own states whether it keeps them readable or not: readable is for others.
    const refusal =
      owner === module
        ? readRefusal(
            manifest.states.map((s) => ({ name: s.name, readable: true })),
            state,
          )
        : readRefusal(statesOf(owners, owner), state);
    if (refusal === undefined) parts.push(kvRead(stateBucket(owner, state)));
    else
      problems.push({
        module,
        read,
        reason: refusal,
        message: refusalMessage(module, owner, state, refusal),
      });
  }

  for (const call of manifest.calls) {
    const [callee, tool] = splitRef(call);
    parts.push(callTool(callee, tool));
  }
  return { rights: merge(...parts), problems };
}

function readRefusal(
  declared: readonly StateDeclaration[] | undefined,
  state: string,
): ReadRefusal | undefined {
  if (declared === undefined) return ReadRefusal.unknownModule;
  const named = declared.filter((s) => s.name === state);
  if (named.length === 0) return ReadRefusal.unknownState;
  // Should an owner declare a name twice, every declaration must say readable: the answer may
  // not depend on which one comes first.
  return named.every((s) => s.readable) ? undefined : ReadRefusal.notReadable;
}

function refusalMessage(module: string, owner: string, state: string, reason: ReadRefusal): string {
  const read = `"${owner}/${state}"`;
  switch (reason) {
    case ReadRefusal.unknownModule:
      return (
        `${module} reads ${read}, but no module ${JSON.stringify(owner)} is known, so the read is not granted; ` +
        `register ${owner}, or remove the read from ${module}'s manifest`
      );
    case ReadRefusal.unknownState:
      return (
        `${module} reads ${read}, but ${owner} declares no state ${JSON.stringify(state)}, so the read is not granted; ` +
        `name one of ${owner}'s states, or remove the read from ${module}'s manifest`
      );
    case ReadRefusal.notReadable:
      return (
        `${module} reads ${read}, but ${owner} does not keep ${state} readable, so the read is not granted; ` +
        `${owner}'s manifest must declare ${state} with readable: true, or remove the read from ${module}'s manifest`
      );
  }
}

function statesOf(owners: Owners, module: string): readonly StateDeclaration[] | undefined {
  const entry = isMap(owners)
    ? owners.get(module)
    : // A plain object: own keys only, or a module called "constructor" would find a function.
      Object.hasOwn(owners, module)
      ? owners[module]
      : undefined;
  if (entry === undefined) return undefined;
  return "states" in entry ? entry.states : entry;
}

const isMap = (owners: Owners): owners is ReadonlyMap<string, OwnerStates> => owners instanceof Map;

/** `<module>/<name>` as the manifest schema checked it. */
function splitRef(ref: string): [string, string] {
  const slash = ref.indexOf("/");
  return [ref.slice(0, slash), ref.slice(slash + 1)];
}

/**
 * A module named after a principal would share that principal's inbox; the manifest check refuses
 * such names, and this refuses them again rather than grant on an unchecked manifest.
 */
function refuseReserved(module: string, { runtime }: { runtime: "allowed" | "refused" }): void {
  if (module === RUNTIME_MODULE && runtime === "refused") {
    throw new MeshError(
      ErrorCode.INVALID_NAME,
      `a module credential was asked for ${JSON.stringify(module)}, the tool runtime; its credential ` +
        `comes from runtimeGrant, which also holds what the modules it serves declare`,
      { module },
    );
  }
  if (RESERVED_MODULE_NAMES.has(module)) {
    throw new MeshError(
      ErrorCode.INVALID_NAME,
      `a module credential was asked for ${JSON.stringify(module)}, the name of one of the mesh's own ` +
        `credentials, whose inbox it would share; check the manifest first (it refuses this name) and rename the module`,
      { module },
    );
  }
}

/** Sorted and without repeats, so the broker can compare them with what it said last time. */
function sortProblems(problems: readonly GrantProblem[]): GrantProblem[] {
  const byKey = new Map<string, GrantProblem>();
  for (const p of problems) byKey.set([p.module, p.read, p.reason].join("\u0000"), p);
  return [...byKey.keys()].sort().map((key) => byKey.get(key) as GrantProblem);
}
