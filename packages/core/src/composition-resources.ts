/** The resources of one module on a node: its needs, its processes, its tools archives. */
import { secretsEnv } from "./secrets-env.js";
import {
  BROKER_SECRET,
  Env,
  RUNTIME_MODULE,
  artifactSource,
  bundlePath,
  bundleResourceId,
  needResourceId,
  processResourceId,
  secretFilePath,
  type ArchiveResource,
  type Manifest,
  type ManifestBundle,
  type NeedResource,
  type ProcessResource,
} from "@mesh/protocol";
import { builtEntrypoint, interpreterFor } from "./bundle-run.js";
import type { CompositionRuleId } from "./composition-rules.js";

/** What composing one module needs to know of the node, and where refusals go. */
export interface Context {
  readonly node: string;
  readonly root: string;
  readonly account: string | undefined;
  readonly runtimeHere: boolean;
  readonly artifacts: { readonly store: string } | undefined;
  readonly refuse: (code: CompositionRuleId, reason: string, fix: string, module?: string) => void;
}

/** A module's declared files: its credential (`broker`) and its secrets, sealed to the node later. */
export function needsOf(m: Manifest, c: Context): NeedResource[] {
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
export function processesOf(m: Manifest, c: Context): ProcessResource[] {
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
export function archivesOf(m: Manifest, c: Context): ArchiveResource[] {
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

/** Where the host fetches a bundle: its digest in the artifact store. Refused without either. */
export function route(
  module: string,
  id: string,
  bundle: ManifestBundle,
  c: Context,
): string | undefined {
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

export function toolsBundles(m: Manifest): ManifestBundle[] {
  return m.bundles.filter((b) => (b.loads ?? []).length > 0).sort((a, b) => cmp(a.name, b.name));
}

/** A copy with keys inserted in sorted order, so JSON.stringify writes them sorted. */
export function sortedKeys<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = (value as Record<string, unknown>)[key];
  return out as T;
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
