/**
 * The bus layout: every bucket, stream, subject, key pattern, resource id and environment
 * variable of the mesh, defined once. Everything else imports these; no other file spells a
 * bucket or a subject.
 */
import { ErrorCode, MeshError } from "./errors.js";
import { ALL_NODES, checkName, isName } from "./names.js";
import { invalidKey } from "./keys.js";

/** Every key-value bucket of the layout (docs/design.md "The bus layout"). */
export const Bucket = {
  modules: "mesh-modules",
  candidates: "mesh-candidates",
  builds: "mesh-builds",
  manifests: "mesh-manifests",
  assignments: "mesh-assignments",
  presence: "mesh-presence",
  have: "mesh-have",
  puts: "mesh-puts",
  /** An operator's retry: lifts the failed marks of a module on a node or every node. */
  retries: "mesh-retries",
  asks: "mesh-asks",
  answers: "mesh-answers",
  wants: "mesh-wants",
  compositions: "mesh-compositions",
  differences: "mesh-differences",
  composed: "mesh-composed",
  grants: "mesh-grants",
  config: "mesh-config",
  secrets: "mesh-secrets",
  /**
   * The assigner's summary of the fleet under one key (`fleet`): counts and the first items that
   * need attention, so readers get the fleet's shape in one get (decision 0090).
   */
  summary: "mesh-summary",
  /** An operator's rollout policy for a module, over its manifest's (issue 22). */
  rolloutPolicies: "mesh-rollout-policies",
  /** An operator's pause, resume, promote, abort or retry of a module's rollout. */
  rolloutSteers: "mesh-rollout-steers",
  /** The assigner's record of each module's rollout: where the next pass continues from. */
  rollouts: "mesh-rollouts",
  /** An operator's config value to move through the waves, and its steering (decision 0131). */
  configRollouts: "mesh-config-rollouts",
  /** The assigner's record of each config value's rollout (decision 0131). */
  configWaves: "mesh-config-waves",
  /**
   * The languages this mesh builds: each build module says its language here when it starts
   * (decision 0160), and the builder asks the module a language names.
   */
  buildModules: "mesh-build-modules",
} as const;
export type Bucket = (typeof Bucket)[keyof typeof Bucket];

/**
 * How each bucket keys its entries and how much history it keeps. `have` keeps history so the
 * assigner can find the build a node last ran healthy.
 */
export const BucketSpec: Record<Bucket, { readonly key: string; readonly history: number }> = {
  [Bucket.modules]: { key: "<module>", history: 1 },
  [Bucket.candidates]: { key: "<module>.<seq>", history: 1 },
  [Bucket.builds]: { key: "<module>.<build>", history: 1 },
  [Bucket.manifests]: { key: "<digest>", history: 1 },
  [Bucket.assignments]: { key: "<node|all>.<module>", history: 1 },
  [Bucket.presence]: { key: "<node>", history: 1 },
  [Bucket.have]: { key: "<node>.<module>", history: 64 },
  [Bucket.puts]: { key: "<node|all>.<module>", history: 1 },
  [Bucket.retries]: { key: "<node|all>.<module>", history: 1 },
  [Bucket.asks]: { key: "<id>", history: 1 },
  [Bucket.answers]: { key: "<id>", history: 1 },
  // A few revisions, so the view can show a cell's rule and reason over time.
  [Bucket.wants]: { key: "<node>.<module>", history: 8 },
  [Bucket.compositions]: { key: "<node>", history: 1 },
  [Bucket.differences]: { key: "<node>.<module>", history: 1 },
  [Bucket.composed]: { key: "<node>", history: 1 },
  [Bucket.grants]: { key: "<node>.<module>", history: 1 },
  [Bucket.config]: { key: "<module>.<key>[.<node>]", history: 1 },
  [Bucket.secrets]: { key: "<module>.<name>", history: 1 },
  [Bucket.summary]: { key: "fleet", history: 1 },
  [Bucket.rolloutPolicies]: { key: "<module>", history: 1 },
  [Bucket.rolloutSteers]: { key: "<module>", history: 1 },
  [Bucket.rollouts]: { key: "<module>", history: 1 },
  [Bucket.configRollouts]: { key: "<module>.<key>", history: 1 },
  [Bucket.configWaves]: { key: "<module>.<key>", history: 1 },
  [Bucket.buildModules]: { key: "<language>", history: 1 },
};

/** The one key of `mesh-summary`: the whole fleet's summary. */
export const SUMMARY_KEY = "fleet";

/** The one object store: bundle archives by the SHA-256 of their bytes. */
export const ObjectStore = {
  artifacts: "mesh-artifacts",
} as const;
export type ObjectStore = (typeof ObjectStore)[keyof typeof ObjectStore];

/** Streams that are not key-value buckets. */
export const Stream = {
  /** Conditions, the last one kept per module and name. */
  conditions: "mesh-conditions",
  /** Process output, bounded by age and size. */
  logs: "mesh-logs",
  /** What each process keeps, the last word kept per process, so a late reader catches up. */
  keeps: "mesh-keeps",
  /** Each served tool's calls and errors, counted by its node's runtime (decision 0172). */
  toolStats: "mesh-tool-stats",
} as const;
export type Stream = (typeof Stream)[keyof typeof Stream];

/** The stream behind a bucket (`KV_<bucket>`) or the object store (`OBJ_<store>`). */
export const kvStreamName = (bucket: string): string => `KV_${bucket}`;
export const objStreamName = (store: string): string => `OBJ_${store}`;

/** The bucket of a module's own state. `_` occurs in no name, so the split is unambiguous. */
export function stateBucket(module: string, state: string): string {
  return `${checkName("module", module)}_${checkName("state", state)}`;
}

/** The module and state of a state bucket's name, or undefined when it is not one. */
export function parseStateBucket(bucket: string): { module: string; state: string } | undefined {
  const parts = bucket.split("_");
  if (parts.length !== 2) return undefined;
  const [module, state] = parts as [string, string];
  return isName("module", module) && isName("state", state) ? { module, state } : undefined;
}

// ---------------------------------------------------------------------------------------------
// Subjects

export const Subject = {
  /** Prefix of every tool endpoint. */
  toolsPrefix: "mesh.tools",
  provisionPrefix: "mesh.provision",
  conditionsPrefix: "mesh.conditions",
  keepsPrefix: "mesh.keeps",
  logsPrefix: "mesh.logs",
  /** `mesh.tool-stats.<node>.<module>`: a runtime's counts of one module's calls (0172). */
  toolStatsPrefix: "mesh.tool-stats",
  join: "mesh.join",
  /** `mesh.renew.<node>`: a host whose own credential expired asks for its current one (0150). */
  renew: "mesh.renew",
  inboxRoot: "_INBOX",
  /** The controller's request endpoints for the operator (only the controller writes secrets). */
  joinToken: "mesh.controller.join-token",
  secretSet: "mesh.controller.secret-set",
  secretList: "mesh.controller.secret-list",
  secretUnset: "mesh.controller.secret-unset",
  /** An operator's word that a condition's cause has ended (`mesh conditions resolve`). */
  conditionResolve: "mesh.controller.condition-resolve",
  /** The operator's ask for a `mesh mcp` credential narrowed to some modules (`--allow`). */
  mcpCredential: "mesh.controller.mcp-credential",
  /** Prefix of the build asks: `mesh.build.<language>`, answered by that language's build module. */
  buildPrefix: "mesh.build",
  /** `mesh view --listen`'s ask for the credential its sessions act with (decision 0171). */
  viewCredential: "mesh.controller.view-credential",
} as const;

/** The subject the builder asks the build module of `language` on (decision 0160). */
export const buildAskSubject = (language: string): string =>
  `${Subject.buildPrefix}.${checkName("language", language)}`;

/** A build module's name: `mesh-build-<language>`, the module a language's refusals name. */
export const buildModuleName = (language: string): string =>
  `mesh-build-${checkName("language", language)}`;

/**
 * A join token is `<id>.<secret>`; the id starts with a digit, so it is never a node or module
 * name and the join user and inbox below can never be a principal's. The joining node connects as
 * the user `join.<id>` with the secret as password (the token is its only way onto the bus) and
 * may only ask `mesh.join` and hear its own inbox. See docs/decisions/0041-join-tokens.md.
 */
export const JOIN_TOKEN_ID_PATTERN = /^[0-9][0-9a-f]{11}$/;
export function parseJoinToken(token: string): { id: string; secret: string } | undefined {
  const dot = token.indexOf(".");
  const id = token.slice(0, dot);
  const secret = token.slice(dot + 1);
  return dot > 0 && JOIN_TOKEN_ID_PATTERN.test(id) && /^[A-Za-z0-9_-]{16,}$/.test(secret)
    ? { id, secret }
    : undefined;
}
/**
 * A join token of a mesh whose bus speaks TLS also carries the bus certificate's SHA-256, as 64
 * hex digits after one more dot: `<id>.<secret>.<sha256>`. `mesh join` pins it and presents
 * only `<id>.<secret>` (decision 0075).
 */
export function pinJoinToken(token: string, fingerprint: string): string {
  return `${token}.${fingerprint.replaceAll(":", "").toLowerCase()}`;
}
/** A token as `mesh join` was given it: the token to present, and the pin it carries if any. */
export function unpinJoinToken(text: string): { token: string; fingerprint?: string } {
  const match = /^(.*)\.([0-9a-fA-F]{64})$/.exec(text);
  if (match === null || parseJoinToken(match[1] ?? "") === undefined) return { token: text };
  const hex = (match[2] ?? "").toUpperCase();
  return { token: match[1] ?? "", fingerprint: (hex.match(/../g) ?? []).join(":") };
}
export const joinUser = (id: string): string => `join.${id}`;
export const joinInbox = (id: string): string => `${Subject.inboxRoot}.join.${id}`;
/** What a join answer is sealed for (the context of seal/unseal): one node's join. */
export const joinSealContext = (node: string): string =>
  `${Subject.join}.${checkName("node", node)}`;

/** Where a node's renewal login asks for its host's current credential. */
export const renewSubject = (node: string): string => `${Subject.renew}.${checkName("node", node)}`;

/** What a host's own credential in its composition is sealed for: that node's host (0150). */
export const hostCredentialContext = (node: string): string =>
  `mesh.host-credential.${checkName("node", node)}`;

/**
 * Headers a tool call may carry. `Mesh-Timeout-Ms` is the caller's deadline for the call in
 * milliseconds: the runtime aborts the handler's signal and answers TIMEOUT when it passes (it
 * caps the value, and uses its default without one).
 */
export const CallHeader = {
  timeoutMs: "Mesh-Timeout-Ms",
} as const;

/** A tool's endpoint: `mesh.tools.<node>.<module>.<tool>`. */
export function toolSubject(node: string, module: string, tool: string): string {
  return `${Subject.toolsPrefix}.${checkName("node", node)}.${checkName("module", module)}.${checkName("tool", tool)}`;
}

/** Every tool endpoint of one module on one node: `mesh.tools.<node>.<module>.*`. */
export function moduleToolsWildcard(node: string, module: string): string {
  return `${Subject.toolsPrefix}.${checkName("node", node)}.${checkName("module", module)}.*`;
}

export function parseToolSubject(subject: string): { node: string; module: string; tool: string } {
  const parts = subject.split(".");
  if (parts.length === 5 && `${parts[0]}.${parts[1]}` === Subject.toolsPrefix) {
    const [, , node, module, tool] = parts as [string, string, string, string, string];
    if (isName("node", node) && isName("module", module) && isName("tool", tool)) {
      return { node, module, tool };
    }
  }
  throw invalidKey(subject, "mesh.tools.<node>.<module>.<tool>");
}

/** Where the runtime asks its node's provisioner client. */
export const provisionSubject = (node: string): string =>
  `${Subject.provisionPrefix}.${checkName("node", node)}`;

/**
 * The NATS service name the host's provisioner client answers under (every node's host runs one,
 * on its own node's subject).
 */
export const PROVISION_SERVICE = "mesh-provision";

/** Where the provisioner client says a value moved. */
export const provisionChangedSubject = (node: string): string =>
  `${Subject.provisionPrefix}.${checkName("node", node)}.changed`;

/**
 * Where a module's own process asks its node's host for its values, as that module: the module
 * is this subject's last token, which only the module's credential may publish to, so the host
 * answers for the module the bus vouches for, never one named in the ask.
 */
export const provisionModuleSubject = (node: string, module: string): string =>
  `${Subject.provisionPrefix}.${checkName("node", node)}.module.${checkName("module", module)}`;

/** Every module's ask subject on a node: what the host serves (`mesh.provision.<node>.module.*`). */
export const provisionModuleWildcard = (node: string): string =>
  `${Subject.provisionPrefix}.${checkName("node", node)}.module.*`;

/** The module an ask on {@link provisionModuleSubject} is for; INVALID_KEY for another subject. */
export function parseProvisionModuleSubject(subject: string): { node: string; module: string } {
  const parts = subject.split(".");
  const [p1, p2, node, word, module, extra] = parts;
  if (
    `${p1}.${p2}` === Subject.provisionPrefix &&
    word === "module" &&
    extra === undefined &&
    isName("node", node) &&
    isName("module", module)
  )
    return { node, module };
  throw invalidKey(subject, "mesh.provision.<node>.module.<module>");
}

/** Where the host tells one module's processes that one of its values moved. */
export const provisionModuleChangedSubject = (node: string, module: string): string =>
  `${Subject.provisionPrefix}.${checkName("node", node)}.changed.${checkName("module", module)}`;

/** Every module's change subject on a node: what the host publishes to. */
export const provisionModuleChangedWildcard = (node: string): string =>
  `${Subject.provisionPrefix}.${checkName("node", node)}.changed.*`;

/**
 * Where a module says a condition. The condition's name is the last token, so the stream can
 * keep the last condition per module and name (see docs/decisions/0002-condition-subjects.md).
 */
export function conditionSubject(module: string, name: string): string {
  return `${Subject.conditionsPrefix}.${checkName("module", module)}.${checkName("state", name)}`;
}

/** Every condition subject of one module. */
export const moduleConditionsWildcard = (module: string): string =>
  `${Subject.conditionsPrefix}.${checkName("module", module)}.*`;

/** Where a process says which states it keeps. */
export const keepsSubject = (node: string, module: string): string =>
  `${Subject.keepsPrefix}.${checkName("node", node)}.${checkName("module", module)}`;

/** Where a process's output goes. */
export const logsSubject = (node: string, module: string): string =>
  `${Subject.logsPrefix}.${checkName("node", node)}.${checkName("module", module)}`;

/** Where a node's runtime files its counts of one module's tool calls (decision 0172). */
export const toolStatsSubject = (node: string, module: string): string =>
  `${Subject.toolStatsPrefix}.${checkName("node", node)}.${checkName("module", module)}`;

/** Each credential's own inbox prefix: `_INBOX.<node>.<module>`. */
export const inboxPrefix = (node: string, module: string): string =>
  `${Subject.inboxRoot}.${checkName("node", node)}.${checkName("module", module)}`;

interface StreamSettings {
  readonly subjects: readonly string[];
  readonly maxMsgsPerSubject: number;
  readonly maxAgeSeconds: number;
  readonly maxBytes: number;
}

/** A stream of what stands: the last message on each subject under `prefix`, kept for good. */
const lastOnEach = (prefix: string, maxBytes: number): StreamSettings => ({
  subjects: [`${prefix}.>`],
  maxMsgsPerSubject: 1,
  maxAgeSeconds: 0,
  maxBytes,
});

/** Settings of the streams the mesh creates beside its buckets. */
export const StreamSpec: Record<Stream, StreamSettings> = {
  [Stream.conditions]: lastOnEach(Subject.conditionsPrefix, 64 * 1024 * 1024),
  [Stream.logs]: {
    subjects: [`${Subject.logsPrefix}.>`],
    maxMsgsPerSubject: -1,
    maxAgeSeconds: 7 * 24 * 3600,
    maxBytes: 256 * 1024 * 1024,
  },
  [Stream.keeps]: lastOnEach(Subject.keepsPrefix, 16 * 1024 * 1024),
  // One message per node and module every few seconds while it is called: an hour of a busy
  // module's windows, a day of a quiet one's, and never more than 64 MiB (decision 0172).
  [Stream.toolStats]: {
    subjects: [`${Subject.toolStatsPrefix}.>`],
    maxMsgsPerSubject: 720,
    maxAgeSeconds: 24 * 3600,
    maxBytes: 64 * 1024 * 1024,
  },
};

// ---------------------------------------------------------------------------------------------
// Resource ids and paths

/** The module that is a node's tool runtime. */
export const RUNTIME_MODULE = "node-tools";

/** The archive that delivers one of a module's bundles: `<module>.bundle-<name>`. */
export const bundleResourceId = (module: string, bundle: string): string =>
  `${checkName("module", module)}.bundle-${checkName("bundle", bundle)}`;

/** A credential or secret file a module declares: `<module>.need-<name>`. */
export const needResourceId = (module: string, name: string): string =>
  `${checkName("module", module)}.need-${checkName("secret", name)}`;

/** A process a module declares: `<module>.process-<name>`. */
export const processResourceId = (module: string, name: string): string =>
  `${checkName("module", module)}.process-${checkName("process", name)}`;

/** The one process that is the node's tool runtime. */
export const RUNTIME_PROCESS_ID = `${RUNTIME_MODULE}.runtime`;

/** The secret name under which a module receives its own bus credential. */
export const BROKER_SECRET = "broker";

/** Where production nodes keep everything; `mesh up --root` replaces it on a dev machine. */
export const DEFAULT_NODE_ROOT = "/var/lib/mesh";

/** Where a bundle is unpacked: `<root>/bundles/<module>/<bundle>`, stable across versions. */
export const bundlePath = (root: string, module: string, bundle: string): string =>
  `${root.replace(/\/+$/, "")}/bundles/${checkName("module", module)}/${checkName("bundle", bundle)}`;

/**
 * Where a module's declared file lands: always under `<root>/secrets/<module>/`. A manifest never
 * names a file elsewhere on the node (the host, often root, would create or delete it there).
 */
/** A module's secrets folder on a node, where its secret files land. */
export const secretsFolder = (root: string, module: string): string =>
  `${root.replace(/\/+$/, "")}/secrets/${checkName("module", module)}`;

export function secretFilePath(root: string, module: string, path: string): string {
  // Only a relative path with no "." or ".." part (the manifest's rule): whatever a manifest
  // says, the file lands inside the module's secrets folder.
  const parts = path.split("/");
  if (path.includes("\u0000") || parts.some((p) => p === "" || p === "." || p === "..")) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `the secret path ${JSON.stringify(path)} of ${module} is not relative to its secrets folder (no leading /, no "." or ".." part); correct own-secrets in ${module}'s manifest`,
      { module, path },
    );
  }
  return `${secretsFolder(root, module)}/${path}`;
}

/** Where the resource id's module part ends. */
export function resourceModule(id: string): string {
  const dot = id.indexOf(".");
  // Without a dot, slice(0, -1) would take all but the last character for a module name.
  const module = dot > 0 && dot < id.length - 1 ? id.slice(0, dot) : "";
  if (!isName("module", module)) throw invalidKey(id, "<module>.<id>");
  return module;
}

// ---------------------------------------------------------------------------------------------
// Environment and principals

export const Env = {
  /** The runtime's modules: `<module>=<path>`, sorted, comma-separated. */
  toolModules: "MESH_TOOL_MODULES",
  /** Each module's own idle time, where its manifest says one: `<module>=<ms>`, sorted. */
  toolIdle: "MESH_TOOL_IDLE",
  /** Where the runtime writes its status file (each module's load result); set by the host. */
  runtimeStatus: "MESH_RUNTIME_STATUS",
  /** 1 on a runtime the host boots ahead: it waits for SIGUSR2 to serve; set by the host. */
  runtimeStandby: "MESH_RUNTIME_STANDBY",
  /** The node's idle time for its runtime's modules (ms); set by the host when it has one. */
  runtimeIdleMs: "MESH_RUNTIME_IDLE_MS",
  /** The path of a process's credential file. */
  brokerFile: "MESH_BROKER_FILE",
  /** A process's module's secrets folder on the node: `<root>/secrets/<module>`. */
  secretsDir: "MESH_SECRETS_DIR",
  /** Every secret file a process's module declares, as JSON: `{"<name>": "<absolute path>"}`. */
  secretFiles: "MESH_SECRET_FILES",
  operatorAccount: "MESH_OPERATOR_ACCOUNT",
  operatorHome: "MESH_OPERATOR_HOME",
  /** The operator's credential for CLI verbs, when not found under `--root`. */
  credential: "MESH_CREDENTIAL",
  /** The nats-server binary to use, before PATH and /usr/sbin. */
  natsServer: "MESH_NATS_SERVER",
} as const;

/**
 * The mesh's own principals. Each gets a credential whose module part is this name, so these
 * names are refused as module names: a module called `controller` would share its inbox.
 */
export const Principal = {
  controller: "controller",
  host: "host",
  assigner: "assigner",
  delivery: "delivery",
  operator: "operator",
  /** `mesh mcp`: discovers and calls tools for an AI agent, and nothing else. */
  mcp: "mcp",
  /** The build modules `mesh up` runs (one process per language, decision 0160). */
  build: "build",
  /** A node's renewal login: may only ask for its host's credential (decision 0150). */
  renewal: "renewal",
} as const;
export type Principal = (typeof Principal)[keyof typeof Principal];

/**
 * A `mesh mcp` credential narrowed to some modules (`mesh mcp --allow`) is the principal
 * `mcp-<digest of the modules>`. No module name may start so, so a narrowed credential never
 * shares a module's bus user or inbox.
 */
export const NARROWED_MCP_PREFIX = `${Principal.mcp}-`;

/**
 * The principals `mesh view --listen` acts as, one per access (decision 0171): the operator's
 * grant, or one that writes nothing. Reserved as module names, like the mesh's own principals.
 */
export const ViewPrincipal = { operate: "view", read: "view-read" } as const;
export type ViewPrincipal = (typeof ViewPrincipal)[keyof typeof ViewPrincipal];

/** What the answer to an ask for a view's credential is sealed for. */
export const viewSealContext = (principal: ViewPrincipal): string =>
  `${Subject.viewCredential}.${principal}`;

/** What the answer to an ask for a narrowed mcp credential is sealed for. */
export const mcpSealContext = (principal: string): string =>
  `${Subject.mcpCredential}.${checkName("module", principal)}`;

/**
 * Names no module may take: the mesh's own principals, `all` (every node, in a target), and
 * `mesh` (the owner of the mesh's own buckets in a part's `reads`, `mesh/wants`: decision 0122).
 */
export const RESERVED_MODULE_NAMES: ReadonlySet<string> = new Set([
  ...Object.values(Principal),
  ...Object.values(ViewPrincipal),
  ALL_NODES,
  "mesh",
]);
