/**
 * Composition: what one node runs, from the resolved manifests of the modules it wants. Pure and
 * deterministic: the same resolution gives byte-identical resources and the same fingerprint,
 * whatever the order of modules, bundles, processes, secrets or environment keys it came in.
 *
 * - Nothing about tools changes on a node until the runtime module (`node-tools`) is among its
 *   modules: a tools bundle nothing loads is bytes nobody reads, so it is not sent.
 * - Where the runtime is, each tools bundle (one with loads) is an archive; a bundle that is run
 *   is delivered by the process resource that runs it, never again as an archive.
 * - The runtime's one process is composed here, not declared: its one bundle run by its
 *   language's interpreter, told what it serves (`MESH_TOOL_MODULES`) and where its credential is
 *   (`MESH_BROKER_FILE`), restarted when a bundle it loads or its credential changes, and run as
 *   the machine's operator account when there is one.
 * - On an adopted machine, a module with a filter is left out altogether (see ManifestFilter).
 * - Every source is routed through the artifact store; without one, each is refused.
 *
 * Manifests come in checked (`checkManifest`) and resolved (bundle digests filled in by the
 * builder); what composition cannot do with them is refused with a reason and a fix, never thrown.
 */
import { createHash } from "node:crypto";
import {
  ABSOLUTE_PATH_PATTERN,
  DEFAULT_NODE_ROOT,
  ErrorCode,
  HOST_MODULE,
  RUNTIME_MODULE,
  isMeshError,
  requiresOf,
  type CompositionRequires,
  isName,
  MeshError,
  type Manifest,
  type Resource,
} from "@mesh/protocol";
import { canonicalJson } from "./fingerprint.js";
import { archivesOf, cmp, needsOf, processesOf, type Context } from "./composition-resources.js";
import { CompositionRule, type CompositionRuleId } from "./composition-rules.js";
import { hostResourceOf } from "./composition-host.js";
import { runtimeProcess } from "./composition-runtime.js";

/** Everything composition needs to know about one node. */
export interface NodeResolution {
  readonly node: string;
  /** The resolved manifests of the modules the node wants, in any order. */
  readonly modules: readonly Manifest[];
  /** The machine's operator account, when it has one; the runtime runs as it. */
  readonly account?: string | undefined;
  /** That account's home; when absent, `/home/<account>` (`/root` for root). */
  readonly accountHome?: string | undefined;
  /** Whether the machine is adopted: its own setup stays its administration's (see filters). */
  readonly adopted?: boolean | undefined;
  /** Where the node keeps the mesh's files; DEFAULT_NODE_ROOT when absent. */
  readonly root?: string | undefined;
  /** How the artifact store is reached; absent when the mesh has none, and then no source routes. */
  readonly artifacts?: { readonly store: string } | undefined;
}

export { CompositionRule, type CompositionRuleId };

export interface CompositionRefusal {
  readonly code: CompositionRuleId;
  readonly node: string;
  /** The module it is about, when it is about one. */
  readonly module?: string;
  /** What failed, quoting the values. */
  readonly reason: string;
  /** What to do. */
  readonly fix: string;
}

/** A module left out of the node's composition, and why. */
export interface LeftOut {
  readonly module: string;
  readonly reason: string;
}

export type Composition =
  | {
      readonly ok: true;
      readonly node: string;
      /** Sorted by id; every object's keys in sorted order, so JSON.stringify is canonical. */
      readonly resources: readonly Resource[];
      /** SHA-256 of the resources' canonical JSON. */
      readonly fingerprint: string;
      /** The fingerprint of each module's own resources (the runtime's process is node-tools'). */
      readonly moduleFingerprints: Readonly<Record<string, string>>;
      readonly leftOut: readonly LeftOut[];
      /** What the host must have to apply it (decision 0202); absent: any host applies it. */
      readonly requires?: CompositionRequires;
    }
  | {
      readonly ok: false;
      readonly node: string;
      readonly code: typeof ErrorCode.COMPOSITION_REFUSED;
      readonly refusals: readonly CompositionRefusal[];
    };

/** The home of an operator account: the one given, else `/root` for root and `/home/<account>`. */
export function accountHomeOf(account: string, home?: string): string {
  if (home !== undefined && home !== "") return home;
  return account === "root" ? "/root" : `/home/${account}`;
}

/** A user name as useradd takes it (and a trailing $ for machine accounts). */
const ACCOUNT_PATTERN = /^[a-z_][a-z0-9_-]{0,31}\$?$/i;

type Refuse = Context["refuse"];

/** Composes one node. Never throws for any resolution; a refusal lists every reason at once. */
export function compose(resolution: NodeResolution): Composition {
  const node = resolution.node;
  const refusals: CompositionRefusal[] = [];
  const refuse: Refuse = (code, reason, fix, module) => {
    refusals.push(
      module === undefined ? { code, node, reason, fix } : { code, node, module, reason, fix },
    );
  };
  const { root, account, home } = placeOf(resolution, refuse);
  const { modules, leftOut } = modulesOf(resolution, refuse);
  if (refusals.length > 0) return refused(node, refusals);

  const runtime = modules.find((m) => m.module === RUNTIME_MODULE);
  const context: Context = {
    node,
    root,
    account,
    runtimeHere: runtime !== undefined,
    artifacts: resolution.artifacts,
    refuse,
  };
  const resources: Resource[] = [];
  try {
    for (const manifest of modules) {
      if (manifest.module === HOST_MODULE) {
        // The host build is no module process: the node's launcher runs it (decision 0200).
        const host = hostResourceOf(manifest, context);
        if (host !== undefined) resources.push(host);
        continue;
      }
      resources.push(...needsOf(manifest, context), ...processesOf(manifest, context));
      if (context.runtimeHere) resources.push(...archivesOf(manifest, context));
    }
    if (runtime !== undefined) {
      const process = runtimeProcess(runtime, modules, home, context);
      if (process !== undefined) resources.push(process);
    }
  } catch (error) {
    // A name the protocol's helpers refuse; checked manifests never get here.
    if (!isMeshError(error, ErrorCode.INVALID_NAME)) throw error;
    refuse(
      "name-valid",
      error.message,
      "compose from checked manifests only (checkManifest)",
      error.module,
    );
  }
  if (refusals.length > 0) return refused(node, refusals);
  const requires = requiresOf(resources.flatMap((r) => FEATURE_OF_TYPE[r.type] ?? []));
  return {
    ok: true,
    node,
    ...fingerprinted(resources),
    leftOut,
    ...(requires === undefined ? {} : { requires }),
  };
}

/**
 * The host feature each resource type needs, where not every host has it (decision 0202): a host
 * older than the feature refuses a composition that uses it, and says the version it needs.
 */
const FEATURE_OF_TYPE: Partial<Record<Resource["type"], string>> = { host: "host-build" };

/** The node's name, root and operator account, each refused when it is not a valid one. */
function placeOf(
  resolution: NodeResolution,
  refuse: Refuse,
): { root: string; account: string | undefined; home: string | undefined } {
  const node = resolution.node;
  if (!isName("node", node)) {
    refuse(
      "name-valid",
      `the node name ${JSON.stringify(node)} is not a valid node name`,
      "compose for a node that joined under a valid name",
    );
  }
  const root = resolution.root ?? DEFAULT_NODE_ROOT;
  const trimmed = root.replace(/\/+$/, "");
  if (root === "" || (trimmed !== "" && !ABSOLUTE_PATH_PATTERN.test(trimmed))) {
    refuse(
      "root-valid",
      `the node's root ${JSON.stringify(root)} is not an absolute path`,
      `give an absolute root, e.g. ${JSON.stringify(DEFAULT_NODE_ROOT)}`,
    );
  }
  const account = resolution.account === "" ? undefined : resolution.account;
  if (account !== undefined && !ACCOUNT_PATTERN.test(account)) {
    refuse(
      "account-valid",
      `the node's operator account ${JSON.stringify(account)} is not a user name`,
      'correct the account in the node\'s presence facts (a user name such as "ada"), or leave it out',
    );
  }
  const home = account === undefined ? undefined : accountHomeOf(account, resolution.accountHome);
  if (home !== undefined && !ABSOLUTE_PATH_PATTERN.test(home)) {
    refuse(
      "account-valid",
      `the operator account's home ${JSON.stringify(home)} is not an absolute path`,
      "give the account's home as an absolute path, or leave it out",
    );
  }
  return { root, account, home };
}

/** The modules to compose, in name order (so nothing depends on the order they came in). */
function modulesOf(
  resolution: NodeResolution,
  refuse: Refuse,
): { modules: Manifest[]; leftOut: LeftOut[] } {
  const node = resolution.node;
  const byName = new Map<string, Manifest>();
  for (const manifest of resolution.modules) {
    if (!isName("module", manifest.module)) {
      refuse(
        "name-valid",
        `the module name ${JSON.stringify(manifest.module)} is not a valid module name`,
        "compose from checked manifests only (checkManifest)",
        manifest.module,
      );
      continue;
    }
    if (byName.has(manifest.module)) {
      refuse(
        "module-once",
        `${manifest.module} is wanted on ${node} twice`,
        "want each module once per node; pick one build",
        manifest.module,
      );
      continue;
    }
    byName.set(manifest.module, manifest);
  }
  const leftOut: LeftOut[] = [];
  const modules: Manifest[] = [];
  for (const name of [...byName.keys()].sort()) {
    const manifest = byName.get(name) as Manifest;
    if (resolution.adopted === true && manifest.filter !== undefined) {
      leftOut.push({
        module: name,
        reason: `${node} is adopted, and ${name} has a filter (${JSON.stringify(manifest.filter.description)}): an adopted machine's own setup is left to its administration`,
      });
    } else modules.push(manifest);
  }
  return { modules, leftOut };
}

/** The resources sorted by id, with the node's fingerprint and each module's. */
function fingerprinted(
  resources: Resource[],
): Pick<Extract<Composition, { ok: true }>, "resources" | "fingerprint" | "moduleFingerprints"> {
  resources.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // Each resource is written once; the node's fingerprint and each module's are hashes of the
  // same pieces, and equal fingerprintOf of the whole list and of each module's part of it.
  const pieces = resources.map((r) => canonicalJson(r));
  const byModule = new Map<string, string[]>();
  resources.forEach((r, i) => {
    const list = byModule.get(r.module) ?? [];
    list.push(pieces[i] ?? "");
    byModule.set(r.module, list);
  });
  const moduleFingerprints: Record<string, string> = {};
  for (const name of [...byModule.keys()].sort()) {
    moduleFingerprints[name] = sha256(`[${(byModule.get(name) ?? []).join(",")}]`);
  }
  return { resources, fingerprint: sha256(`[${pieces.join(",")}]`), moduleFingerprints };
}

/** The error for a refused composition: COMPOSITION_REFUSED, every reason and fix in the message. */
export function compositionRefused(
  node: string,
  refusals: readonly CompositionRefusal[],
): MeshError {
  const lines = refusals.map((r) => `  ${r.reason}; ${r.fix} [${r.code}]`);
  return new MeshError(
    ErrorCode.COMPOSITION_REFUSED,
    `${node} cannot be composed (${refusals.length} reason(s)); what it runs stays as it is until each is fixed:\n${lines.join("\n")}`,
    { node, ...(refusals[0]?.module === undefined ? {} : { module: refusals[0].module }) },
  );
}

function refused(node: string, refusals: readonly CompositionRefusal[]): Composition {
  const sorted = [...refusals].sort(
    (a, b) => cmp(a.module ?? "", b.module ?? "") || cmp(a.code, b.code) || cmp(a.reason, b.reason),
  );
  return { ok: false, node, code: ErrorCode.COMPOSITION_REFUSED, refusals: sorted };
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
