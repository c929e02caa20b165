/** The node's tool runtime: one process, composed from the runtime module and what the node's modules load. */
import {
  BROKER_SECRET,
  Env,
  RUNTIME_MODULE,
  RUNTIME_PROCESS_ID,
  bundlePath,
  bundleResourceId,
  needResourceId,
  secretFilePath,
  type Manifest,
  type ManifestBundle,
  type ProcessResource,
} from "@mesh/protocol";
import { builtEntrypoint, interpreterFor, RUNNABLE_LANGUAGES } from "./bundle-run.js";
import { route, sortedKeys, toolsBundles, type Context } from "./composition-resources.js";

/** What the runtime module must give for the mesh to run it. */
interface RuntimeParts {
  readonly bundle: ManifestBundle & { readonly digest: string };
  readonly source: string;
  readonly run: string[];
  readonly credentialPath: string;
}

export function runtimeProcess(
  runtime: Manifest,
  modules: readonly Manifest[],
  home: string | undefined,
  c: Context,
): ProcessResource | undefined {
  const parts = runtimeParts(runtime, c);
  if (parts === undefined) return undefined;
  const { bundle } = parts;
  const env: Record<string, string> = {
    ...servedEnv(modules, c),
    [Env.brokerFile]: secretFilePath(c.root, RUNTIME_MODULE, parts.credentialPath),
  };
  if (c.account !== undefined && home !== undefined) {
    env[Env.operatorAccount] = c.account;
    env[Env.operatorHome] = home;
  }
  const restartOn = [
    needResourceId(RUNTIME_MODULE, BROKER_SECRET),
    ...modules.flatMap((m) => toolsBundles(m).map((b) => bundleResourceId(m.module, b.name))),
  ];
  return sortedKeys({
    id: RUNTIME_PROCESS_ID,
    type: "process" as const,
    name: RUNTIME_MODULE,
    module: RUNTIME_MODULE,
    source: parts.source,
    digest: bundle.digest,
    path: bundlePath(c.root, RUNTIME_MODULE, bundle.name),
    run: parts.run,
    env: sortedKeys(env),
    "restart-on": [...new Set(restartOn)].sort(),
    ...(c.account === undefined ? {} : { user: c.account }),
  });
}

/** The runtime module's one bundle, its run and credential; refused (every reason) when unusable. */
function runtimeParts(runtime: Manifest, c: Context): RuntimeParts | undefined {
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
  const digest = bundle.digest;
  if (
    !usable ||
    source === undefined ||
    interpreter === undefined ||
    credential === undefined ||
    entry === undefined ||
    digest === undefined
  ) {
    return undefined;
  }
  return {
    bundle: { ...bundle, digest },
    source,
    run: [interpreter, builtEntrypoint(bundle.language, entry)],
    credentialPath: credential.path,
  };
}

/**
 * What the runtime serves, from which files: every module composed here, each file of each tools
 * bundle, and each module's own idle time where its manifest says one. Sorted, so neither module
 * order nor bundle order moves it.
 */
function servedEnv(modules: readonly Manifest[], c: Context): Record<string, string> {
  const served: string[] = [];
  const idle: string[] = [];
  for (const m of modules) {
    const idleAfter = m["tools-idle"];
    if (idleAfter !== undefined && toolsBundles(m).length > 0)
      idle.push(`${m.module}=${idleAfter * 1000}`);
    for (const b of toolsBundles(m)) {
      const folder = bundlePath(c.root, m.module, b.name);
      for (const load of b.loads ?? [])
        served.push(`${m.module}=${folder}/${builtEntrypoint(b.language, load)}`);
    }
  }
  return {
    [Env.toolModules]: [...new Set(served)].sort().join(","),
    ...(idle.length === 0 ? {} : { [Env.toolIdle]: idle.sort().join(",") }),
  };
}
