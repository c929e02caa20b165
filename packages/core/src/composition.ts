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
import { secretsEnv } from "./secrets-env.js";
import {
  ABSOLUTE_PATH_PATTERN,
  BROKER_SECRET,
  DEFAULT_NODE_ROOT,
  Env,
  ErrorCode,
  RUNTIME_MODULE,
  RUNTIME_PROCESS_ID,
  artifactSource,
  bundlePath,
  bundleResourceId,
  isMeshError,
  isName,
  needResourceId,
  processResourceId,
  secretFilePath,
  MeshError,
  type ArchiveResource,
  type Manifest,
  type ManifestBundle,
  type NeedResource,
  type ProcessResource,
  type Resource,
} from "@mesh/protocol";
import { builtEntrypoint, interpreterFor, RUNNABLE_LANGUAGES } from "./bundle-run.js";
import { canonicalJson } from "./fingerprint.js";

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

/** Why a composition was refused, and what would let it through. */
export const CompositionRule = {
  "runtime-one-bundle": "the runtime module declares exactly one bundle",
  "runtime-one-entrypoint": "the runtime's bundle has exactly one entrypoint",
  "runtime-language": "the runtime's bundle is in a language the mesh has an interpreter for",
  "runtime-broker-secret": "the runtime module declares its broker own-secret",
  "artifact-store-missing": "every source is routed through the artifact store",
  "bundle-digest-missing": "a delivered bundle has the digest its build gave it",
  "process-bundle-exists": "a process runs a bundle its manifest declares",
  "process-run-needed": "a process without run has a bundle with an entrypoint and an interpreter",
  "module-once": "each module is wanted once",
  "name-valid": "the node and every module, bundle, process and secret have valid names",
  "account-valid": "the operator account is a user name and its home an absolute path",
  "root-valid": "the node's root is an absolute path",
} as const;
export type CompositionRuleId = keyof typeof CompositionRule;

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

/** Composes one node. Never throws for any resolution; a refusal lists every reason at once. */
export function compose(resolution: NodeResolution): Composition {
  const node = resolution.node;
  const refusals: CompositionRefusal[] = [];
  const refuse = (code: CompositionRuleId, reason: string, fix: string, module?: string): void => {
    refusals.push(
      module === undefined ? { code, node, reason, fix } : { code, node, module, reason, fix },
    );
  };

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

  // Name order, so nothing below depends on the order the modules came in.
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
  return {
    ok: true,
    node,
    resources,
    fingerprint: sha256(`[${pieces.join(",")}]`),
    moduleFingerprints,
    leftOut,
  };
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

interface Context {
  readonly node: string;
  readonly root: string;
  readonly account: string | undefined;
  readonly runtimeHere: boolean;
  readonly artifacts: { readonly store: string } | undefined;
  readonly refuse: (code: CompositionRuleId, reason: string, fix: string, module?: string) => void;
}

function refused(node: string, refusals: readonly CompositionRefusal[]): Composition {
  const sorted = [...refusals].sort(
    (a, b) => cmp(a.module ?? "", b.module ?? "") || cmp(a.code, b.code) || cmp(a.reason, b.reason),
  );
  return { ok: false, node, code: ErrorCode.COMPOSITION_REFUSED, refusals: sorted };
}

/** A module's declared files: its credential (`broker`) and its secrets, sealed to the node later. */
function needsOf(m: Manifest, c: Context): NeedResource[] {
  // A file belongs to whoever runs the code that reads it. The runtime runs as the operator
  // account, when there is one: its own credential is the account's, and so are the secrets of the
  // modules whose tools it serves here (tool code reads its secrets as files). A module's own bus
  // credential is for its processes (the host's account), never for the runtime, or every tool
  // module's code could speak on the bus as that module.
  const servedHere = c.runtimeHere && toolsBundles(m).length > 0;
  return Object.keys(m["own-secrets"])
    .sort()
    .map((name) => {
      const path = secretFilePath(
        c.root,
        m.module,
        (m["own-secrets"][name] as { path: string }).path,
      );
      const credential = name === BROKER_SECRET;
      const user =
        m.module === RUNTIME_MODULE || (servedHere && !credential) ? c.account : undefined;
      return sortedKeys({
        id: needResourceId(m.module, name),
        type: "need" as const,
        kind: credential ? ("credential" as const) : ("secret" as const),
        module: m.module,
        name,
        path,
        ...(user === undefined ? {} : { user }),
      });
    });
}

/** One process resource per declared process. */
function processesOf(m: Manifest, c: Context): ProcessResource[] {
  const out: ProcessResource[] = [];
  const broker = m["own-secrets"][BROKER_SECRET];
  for (const p of m.processes) {
    const id = processResourceId(m.module, p.name);
    const bundle = m.bundles.find((b) => b.name === p.bundle);
    if (bundle === undefined) {
      c.refuse(
        "process-bundle-exists",
        `${id} runs the bundle ${JSON.stringify(p.bundle)}, which ${m.module}'s manifest does not declare`,
        "declare the bundle, or correct the process's bundle; checkManifest catches this at registration",
        m.module,
      );
      continue;
    }
    const run = p.run ?? defaultRun(m, bundle, id, c);
    const source = route(m.module, id, bundle, c);
    if (run === undefined || source === undefined || bundle.digest === undefined) continue;
    // A module that declares its credential is told where it is, and restarted when it changes,
    // as the runtime is: a process holding an old password would lose the bus.
    const env: Record<string, string> = { ...p.env, ...secretsEnv(m, c.root) };
    const restartOn = new Set(p["restart-on"] ?? []);
    if (broker !== undefined) {
      env[Env.brokerFile] = secretFilePath(c.root, m.module, broker.path);
      restartOn.add(needResourceId(m.module, BROKER_SECRET));
    }
    out.push(
      sortedKeys({
        id,
        type: "process" as const,
        name: p.name,
        module: m.module,
        source,
        digest: bundle.digest,
        path: bundlePath(c.root, m.module, bundle.name),
        run: [...run],
        env: sortedKeys(env),
        "restart-on": [...restartOn].sort(),
      }),
    );
  }
  return out;
}

/** The bundle's first entrypoint as built, run by its language's interpreter. */
function defaultRun(
  m: Manifest,
  bundle: ManifestBundle,
  id: string,
  c: Context,
): string[] | undefined {
  const interpreter = interpreterFor(bundle.language);
  const [entry] = bundle.entrypoints;
  if (interpreter === undefined || entry === undefined) {
    c.refuse(
      "process-run-needed",
      interpreter === undefined
        ? `${id} gives no run, and its bundle ${JSON.stringify(bundle.name)} is ${JSON.stringify(bundle.language)}, which the mesh knows no interpreter for`
        : `${id} gives no run, and its bundle ${JSON.stringify(bundle.name)} has no entrypoint`,
      `give the process a run in ${m.module}'s manifest`,
      m.module,
    );
    return undefined;
  }
  return [interpreter, builtEntrypoint(bundle.language, entry)];
}

/** One archive per tools bundle (a bundle with loads), only where the runtime is. */
function archivesOf(m: Manifest, c: Context): ArchiveResource[] {
  const out: ArchiveResource[] = [];
  for (const bundle of toolsBundles(m)) {
    const id = bundleResourceId(m.module, bundle.name);
    const source = route(m.module, id, bundle, c);
    if (source === undefined || bundle.digest === undefined) continue;
    out.push(
      sortedKeys({
        id,
        type: "archive" as const,
        module: m.module,
        source,
        digest: bundle.digest,
        path: bundlePath(c.root, m.module, bundle.name),
      }),
    );
  }
  return out;
}

/** The node's tool runtime, composed from the runtime module and what the node's modules load. */
function runtimeProcess(
  runtime: Manifest,
  modules: readonly Manifest[],
  home: string | undefined,
  c: Context,
): ProcessResource | undefined {
  const where = `${RUNTIME_MODULE} is wanted on ${c.node}`;
  if (runtime.bundles.length !== 1) {
    c.refuse(
      "runtime-one-bundle",
      `${where} and its build has ${runtime.bundles.length} bundle(s); the runtime is one bundle the mesh runs`,
      `give ${RUNTIME_MODULE}'s manifest exactly one bundle, then build it again`,
      RUNTIME_MODULE,
    );
    return undefined;
  }
  const bundle = runtime.bundles[0] as ManifestBundle;
  let usable = true;
  if (bundle.entrypoints.length !== 1) {
    c.refuse(
      "runtime-one-entrypoint",
      `${where} and its bundle ${JSON.stringify(bundle.name)} has ${bundle.entrypoints.length} entrypoint(s); the runtime is started from exactly one`,
      `give the bundle exactly one entrypoint in ${RUNTIME_MODULE}'s manifest`,
      RUNTIME_MODULE,
    );
    usable = false;
  }
  const interpreter = interpreterFor(bundle.language);
  if (interpreter === undefined) {
    c.refuse(
      "runtime-language",
      `${where} and its bundle is written in ${JSON.stringify(bundle.language)}, which the mesh knows no interpreter for`,
      `build the runtime in a language the mesh can run: ${RUNNABLE_LANGUAGES.map((l) => JSON.stringify(l)).join(", ")}`,
      RUNTIME_MODULE,
    );
    usable = false;
  }
  const credential = runtime["own-secrets"][BROKER_SECRET];
  if (credential === undefined) {
    c.refuse(
      "runtime-broker-secret",
      `${where} and declares no own-secret named ${JSON.stringify(BROKER_SECRET)}, where the node delivers the runtime's credential`,
      `declare it in ${RUNTIME_MODULE}'s manifest: "own-secrets": {"${BROKER_SECRET}": {"path": "broker.json"}}`,
      RUNTIME_MODULE,
    );
    usable = false;
  }
  const source = route(RUNTIME_MODULE, RUNTIME_PROCESS_ID, bundle, c);
  const [entry] = bundle.entrypoints;
  if (
    !usable ||
    source === undefined ||
    interpreter === undefined ||
    credential === undefined ||
    entry === undefined ||
    bundle.digest === undefined
  ) {
    return undefined;
  }

  // What it serves, from which files: every module composed here, each file of each tools bundle.
  // Sorted, so neither module order nor bundle order moves it.
  const served: string[] = [];
  const idle: string[] = [];
  const restartOn: string[] = [needResourceId(RUNTIME_MODULE, BROKER_SECRET)];
  for (const m of modules) {
    const idleAfter = m["tools-idle"];
    if (idleAfter !== undefined && toolsBundles(m).length > 0)
      idle.push(`${m.module}=${idleAfter * 1000}`);
    for (const b of toolsBundles(m)) {
      const folder = bundlePath(c.root, m.module, b.name);
      for (const load of b.loads ?? [])
        served.push(`${m.module}=${folder}/${builtEntrypoint(b.language, load)}`);
      restartOn.push(bundleResourceId(m.module, b.name));
    }
  }
  const env: Record<string, string> = {
    [Env.toolModules]: [...new Set(served)].sort().join(","),
    [Env.brokerFile]: secretFilePath(c.root, RUNTIME_MODULE, credential.path),
    // A module's own idle time, where its manifest says one.
    ...(idle.length === 0 ? {} : { [Env.toolIdle]: idle.sort().join(",") }),
  };
  if (c.account !== undefined && home !== undefined) {
    env[Env.operatorAccount] = c.account;
    env[Env.operatorHome] = home;
  }
  return sortedKeys({
    id: RUNTIME_PROCESS_ID,
    type: "process" as const,
    name: RUNTIME_MODULE,
    module: RUNTIME_MODULE,
    source,
    digest: bundle.digest,
    path: bundlePath(c.root, RUNTIME_MODULE, bundle.name),
    run: [interpreter, builtEntrypoint(bundle.language, entry)],
    env: sortedKeys(env),
    "restart-on": [...new Set(restartOn)].sort(),
    ...(c.account === undefined ? {} : { user: c.account }),
  });
}

/** Where the host fetches a bundle: its digest in the artifact store. Refused without either. */
function route(module: string, id: string, bundle: ManifestBundle, c: Context): string | undefined {
  if (bundle.digest === undefined) {
    c.refuse(
      "bundle-digest-missing",
      `${id} delivers the bundle ${JSON.stringify(bundle.name)} of ${module}, which has no digest: the manifest is not a resolved one`,
      "compose from the build's resolved manifest (mesh-manifests), where the builder filled in each bundle's digest",
      module,
    );
    return undefined;
  }
  if (c.artifacts === undefined || c.artifacts.store === "") {
    const kept = bundle.source === undefined ? "its build" : JSON.stringify(bundle.source);
    c.refuse(
      "artifact-store-missing",
      `${id} comes from ${kept} (digest ${bundle.digest.slice(0, 12)}…), and there is no artifact store to route it through`,
      "start the controller with the mesh's artifact store (the object store mesh-artifacts that `mesh up` creates)",
      module,
    );
    return undefined;
  }
  return artifactSource(c.artifacts.store, bundle.digest);
}

function toolsBundles(m: Manifest): ManifestBundle[] {
  return m.bundles.filter((b) => (b.loads ?? []).length > 0).sort((a, b) => cmp(a.name, b.name));
}

/** A copy with keys inserted in sorted order, so JSON.stringify writes them sorted. */
function sortedKeys<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = (value as Record<string, unknown>)[key];
  return out as T;
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
