/**
 * The value of every bucket and message of the bus layout, as a schema and a type. A value read
 * off the bus is parsed with its schema before it is trusted; `BucketValue` (bucket-value.ts)
 * maps each bucket to its schema so helpers can do that by bucket name.
 */
import { z } from "zod";
import { ErrorCode } from "./errors.js";
import { BuildId, Digest, Manifest } from "./manifest.js";
import { ALL_NODES, ASK_ID_PATTERN, NAME_PATTERN, TOOL_NAME_PATTERN } from "./names.js";
import { CompositionRequires } from "./host-features.js";
import { Resource } from "./resources.js";

export const Name = z.string().regex(NAME_PATTERN);
/** A node's name: a name, and never `all`, which means every node in assignments and puts. */
const NodeName = Name.refine((name) => name !== ALL_NODES, {
  error: '"all" is not a node name: it means every node in assignments and puts',
});
/** An instant, as ISO 8601 in UTC. */
export const Instant = z.iso.datetime();
/** Who did something: an operator's name or one of the mesh's principals. */
export const Actor = z.string().min(1).max(200);

// mesh-modules ---------------------------------------------------------------------------------

export const ModuleSource = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("directory"), path: z.string().min(1) }).strict(),
  z.object({ kind: z.literal("git"), url: z.string().min(1), ref: z.string().min(1) }).strict(),
  z.object({ kind: z.literal("archive"), url: z.string().min(1), digest: Digest }).strict(),
]);
export type ModuleSource = z.infer<typeof ModuleSource>;

export const ModuleRegistration = z
  .object({ module: Name, source: ModuleSource, by: Actor, at: Instant })
  .strict();
export type ModuleRegistration = z.infer<typeof ModuleRegistration>;

// mesh-candidates ------------------------------------------------------------------------------

export const Candidate = z
  .object({
    module: Name,
    seq: z.number().int().positive(),
    /** The revision in the source's own terms: a commit, or the directory digest. */
    revision: z.string().min(1),
    sourceDigest: Digest,
    at: Instant,
  })
  .strict();
export type Candidate = z.infer<typeof Candidate>;

// mesh-builds ----------------------------------------------------------------------------------

export const BuildStatus = z.enum(["building", "built", "failed"]);
export type BuildStatus = z.infer<typeof BuildStatus>;

export const BuiltBundle = z
  .object({ name: Name, digest: Digest, size: z.number().int().nonnegative() })
  .strict();
export type BuiltBundle = z.infer<typeof BuiltBundle>;

export const Build = z
  .object({
    module: Name,
    build: BuildId,
    status: BuildStatus,
    candidate: z.number().int().positive(),
    manifestDigest: Digest.optional(),
    bundles: z.array(BuiltBundle),
    error: z.string().optional(),
    /** The last lines of the build's output. */
    log: z.string(),
    timings: z
      .object({
        started: Instant,
        finished: Instant.optional(),
        ms: z.number().nonnegative().optional(),
      })
      .strict(),
  })
  .strict();
export type Build = z.infer<typeof Build>;

// mesh-manifests -------------------------------------------------------------------------------

/** A manifest whose bundles carry the digest and size of their built archives. */
export const ResolvedManifest = Manifest;
export type ResolvedManifest = z.infer<typeof ResolvedManifest>;

// mesh-assignments, mesh-puts -----------------------------------------------------------------

export const Assignment = z.object({ by: Actor, at: Instant }).strict();
export type Assignment = z.infer<typeof Assignment>;

export const Put = z
  .object({ build: BuildId, by: Actor, why: z.string().max(2000), at: Instant })
  .strict();
export type Put = z.infer<typeof Put>;

// mesh-retries ---------------------------------------------------------------------------------

/**
 * An operator's retry of a module (`mesh retry`): every failing report in mesh-have up to
 * `haveRevision` (the bucket's revision when the retry was made) no longer marks its build, so
 * the assigner wants the newest build there again (docs/decisions/0034).
 */
export const Retry = z
  .object({
    haveRevision: z.number().int().nonnegative(),
    by: Actor,
    why: z.string().max(2000),
    at: Instant,
  })
  .strict();
export type Retry = z.infer<typeof Retry>;

// mesh-presence --------------------------------------------------------------------------------

/** Between a host's presence heartbeats, unless it is told otherwise. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * A node whose last heartbeat is older than this is gone: three missed beats, not one late one.
 * `mesh status` and the view both judge by it.
 */
export const PRESENCE_GONE_MS = 3 * DEFAULT_HEARTBEAT_MS;

export const Presence = z
  .object({
    node: NodeName,
    facts: z
      .object({
        hostname: z.string(),
        os: z.string(),
        arch: z.string(),
        account: z.string().optional(),
        accountHome: z.string().optional(),
        adopted: z.boolean().optional(),
        /** Where the node keeps the mesh's files, when not /var/lib/mesh (a `mesh up` root). */
        root: z.string().min(1).optional(),
        version: z.string(),
      })
      .strict(),
    /** The node's X25519 public key, base64 (DER, SPKI), that needs are sealed to. */
    publicKey: z.string().min(1),
    heartbeat: Instant,
    /** The last time the host was without the bus (a partition, the bus down), once it is back. */
    lastOutage: z.object({ lost: Instant, back: Instant }).strict().optional(),
  })
  .strict();
export type Presence = z.infer<typeof Presence>;

// mesh-have ------------------------------------------------------------------------------------

export const Health = z.enum(["starting", "healthy", "failing", "stopped"]);
export type Health = z.infer<typeof Health>;

/** A code of the one closed table (`ErrorCode`), as a value on the bus carries it. */
const Code = z.enum(Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]]);

export const Have = z
  .object({
    build: BuildId.optional(),
    fingerprint: z.string(),
    health: Health,
    since: Instant,
    restarts: z.number().int().nonnegative(),
    /** Why it fails or last failed, in words; its code is `lastErrorCode`. */
    lastError: z.string().optional(),
    /**
     * The code of `lastError`, which is what a program decides on. Absent in a have written by a
     * host from before codes were reported.
     */
    lastErrorCode: Code.optional(),
    /**
     * What the module waits for before it can start (a secret not set yet) and the command that
     * ends the wait; its health is `starting` meanwhile, never `failing`. `code` says what kind of
     * wait it is (`BUS_UNAVAILABLE`, `NOT_FOUND`: a secret or credential not there yet); absent
     * in a have written by an older host.
     */
    waitingFor: z
      .object({ code: Code.optional(), what: z.string(), fix: z.string() })
      .strict()
      .optional(),
    /**
     * A crash loop: how many times its processes exited in a row since they last ran healthy,
     * and when the last exit was (its reason is `lastError`). Absent once a run lasts.
     */
    exits: z.object({ inARow: z.number().int().positive(), last: Instant }).strict().optional(),
    /**
     * The module's config as its processes see it here (decision 0131): the fingerprint of each
     * declared key's value, and when one of them last moved (this node's clock). A config
     * rollout's gate reads it; absent in a have written by an older host.
     */
    config: z
      .object({ values: z.record(z.string(), z.string()), since: Instant })
      .strict()
      .optional(),
  })
  .strict();
export type Have = z.infer<typeof Have>;

// mesh-asks, mesh-answers ----------------------------------------------------------------------

export const Ask = z
  .object({
    id: z.string().regex(ASK_ID_PATTERN),
    what: z.string().min(1),
    module: Name,
    build: BuildId,
    nodes: z.array(NodeName),
    at: Instant,
  })
  .strict();
export type Ask = z.infer<typeof Ask>;

export const Answer = z.object({ answer: z.enum(["yes", "no"]), by: Actor, at: Instant }).strict();
export type Answer = z.infer<typeof Answer>;

// mesh-wants, mesh-compositions, mesh-differences ----------------------------------------------

/**
 * The assigner's rules, in the order they apply: the order is this list, and `@mesh/core` runs
 * one rule file per name in this order (core/src/assigner/rules/). A want names the rule that
 * decided it.
 */
export const RULE_ORDER = [
  "placed",
  "built",
  "put",
  "newest",
  "set-back",
  "halt",
  "waves",
  "widening",
  "checked",
] as const;
export const Rule = z.enum(RULE_ORDER);
export type Rule = z.infer<typeof Rule>;

export const Want = z
  .object({
    build: BuildId,
    manifestDigest: Digest,
    fingerprint: z.string(),
    rule: Rule,
    reason: z.string().min(1),
  })
  .strict();
export type Want = z.infer<typeof Want>;

export const CompositionVerdict = z
  .object({
    node: NodeName,
    verdict: z.enum(["ok", "refused"]),
    /** The modules and builds that were checked together. */
    wanted: z.record(Name, BuildId),
    reasons: z.array(z.string()),
  })
  .strict();
export type CompositionVerdict = z.infer<typeof CompositionVerdict>;

export const Difference = z
  .object({
    want: z.string().optional(),
    composed: z.string().optional(),
    have: z.string().optional(),
    reasons: z.array(z.string()),
  })
  .strict();
export type Difference = z.infer<typeof Difference>;

// mesh-composed --------------------------------------------------------------------------------

/**
 * What the host's provisioner client needs of one module composed on the node, so it can answer
 * the runtime without reading manifests: the module's build, its declared config keys with their
 * defaults, and the values the mesh derives for it (see `BoundKey`).
 */
export const ComposedModule = z
  .object({
    build: BuildId.optional(),
    manifestDigest: Digest.optional(),
    config: z.record(z.string(), z.object({ default: z.json().optional() }).strict()),
    bound: z.record(z.string(), z.json()),
  })
  .strict();
export type ComposedModule = z.infer<typeof ComposedModule>;

export const Composed = z
  .object({
    node: NodeName,
    resources: z.array(Resource),
    /** Per module composed on the node; absent in compositions written before it existed. */
    modules: z.record(Name, ComposedModule).optional(),
    /**
     * Accounts mode: the host's own credential, sealed to the node's key (context
     * `hostCredentialContext(node)`); renewed or regranted, it reaches the host here (decision 0150).
     */
    hostCredential: z.string().optional(),
    /**
     * What the host must apply to take this composition: features not every host has, and the
     * mesh version that has them (decision 0202). Absent: any host applies it.
     */
    requires: CompositionRequires.optional(),
    fingerprint: z.string().min(1),
  })
  .strict();
export type Composed = z.infer<typeof Composed>;

// mesh-grants ----------------------------------------------------------------------------------

/** An allow or deny list; an empty allow list is never written (it allows everything). */
export const SubjectList = z.array(z.string().min(1));

export const Permissions = z
  .object({
    publish: z.object({ allow: SubjectList.optional(), deny: SubjectList.optional() }).strict(),
    subscribe: z.object({ allow: SubjectList.optional(), deny: SubjectList.optional() }).strict(),
    /**
     * Whether the user may reply to requests it receives (services). `true` allows one reply per
     * request within the server's default two minutes; `{ max }` allows that many, which a
     * connection running several services needs (each answers a mesh-wide `$SRV.PING`).
     */
    allowResponses: z
      .union([
        z.boolean(),
        z
          .object({
            max: z.number().int().positive(),
            expiresMs: z.number().int().positive().optional(),
          })
          .strict(),
      ])
      .optional(),
  })
  .strict();
export type Permissions = z.infer<typeof Permissions>;

export const Grant = z
  .object({
    user: z.string().min(1),
    node: NodeName,
    module: Name,
    permissions: Permissions,
    at: Instant,
  })
  .strict();
export type Grant = z.infer<typeof Grant>;

// mesh-config, mesh-secrets --------------------------------------------------------------------

/** A config value as an operator set it: the value, who set it and when. */
export const SET_VALUE_FIELDS = { value: z.json(), by: Actor, at: Instant };

export const ConfigValue = z
  .object({
    ...SET_VALUE_FIELDS,
    /**
     * On a node's value the assigner wrote for a config rollout (decision 0131): the time of the
     * operator's request it moves. A node value without it is an operator's own.
     */
    rollout: Instant.optional(),
  })
  .strict();
export type ConfigValue = z.infer<typeof ConfigValue>;

/** A secret sealed with the vault's key (AES-256-GCM), base64 parts. */
export const SealedSecret = z
  .object({
    nonce: z.string().min(1),
    ciphertext: z.string().min(1),
    tag: z.string().min(1),
    by: Actor,
    at: Instant,
  })
  .strict();
export type SealedSecret = z.infer<typeof SealedSecret>;

// Messages -------------------------------------------------------------------------------------

/** `mesh.keeps.<node>.<module>`: the states a process keeps and which of them others may read. */
export const Keeps = z
  .object({
    node: NodeName,
    module: Name,
    states: z.array(z.object({ name: Name, readable: z.boolean() }).strict()),
    at: Instant,
  })
  .strict();
export type Keeps = z.infer<typeof Keeps>;

export const ConditionLevel = z.enum(["info", "warning", "error"]);
export type ConditionLevel = z.infer<typeof ConditionLevel>;

/** `mesh.conditions.<module>.<name>`: something a module wants an operator to know. */
export const Condition = z
  .object({
    module: Name,
    name: Name,
    level: ConditionLevel,
    message: z.string().min(1).max(4000),
    node: NodeName.optional(),
    at: Instant,
    /**
     * Its cause has ended (said by whoever said it, or an operator's `mesh conditions resolve`):
     * same subject, so it replaces the open one in the stream's last per module and name.
     */
    resolved: z.boolean().optional(),
  })
  .strict();
export type Condition = z.infer<typeof Condition>;

/** `mesh.provision.<node>`: the runtime asks for a module's value. */
export const ProvisionAsk = z
  .object({ module: Name, kind: z.enum(["config", "bound", "secret"]), key: z.string().min(1) })
  .strict();
export type ProvisionAsk = z.infer<typeof ProvisionAsk>;

/** A module's own process asks `{kind, key}`: the module is the subject's (the bus vouches for it). */
export const ModuleProvisionAsk = ProvisionAsk.omit({ module: true });
export type ModuleProvisionAsk = z.infer<typeof ModuleProvisionAsk>;

/**
 * The answer to a provision ask: the value. A refusal is a coded error reply instead (REFUSED or
 * NOT_FOUND, with the reason as its description).
 */
export const ProvisionAnswer = z.object({ value: z.json() }).strict();
export type ProvisionAnswer = z.infer<typeof ProvisionAnswer>;

/** `mesh.provision.<node>.changed`: a value moved; no key means every value of that kind. */
export const ProvisionChanged = z
  .object({ module: Name, kind: z.enum(["config", "bound"]), key: z.string().min(1).optional() })
  .strict();
export type ProvisionChanged = z.infer<typeof ProvisionChanged>;

/** `mesh.join`: a new node presents a one-time token and its public key. */
export const JoinRequest = z
  .object({ token: z.string().min(1), node: NodeName, publicKey: z.string().min(1) })
  .strict();
export type JoinRequest = z.infer<typeof JoinRequest>;

/** The answer to a join: the node's host credential, sealed to the key it presented. */
export const JoinAnswer = z.object({ node: NodeName, sealed: z.string().min(1) }).strict();
export type JoinAnswer = z.infer<typeof JoinAnswer>;

/**
 * The answer on `mesh.renew.<node>`: the host's current credential, sealed to the node's key in
 * its presence (context `hostCredentialContext(node)`), as its composition carries it.
 */
export const RenewAnswer = JoinAnswer;
export type RenewAnswer = JoinAnswer;

/** `mesh.logs.<node>.<module>`: one line of a process's output. */
export const LogLine = z
  .object({
    process: z.string().min(1),
    stream: z.enum(["stdout", "stderr"]),
    line: z.string(),
    at: Instant,
  })
  .strict();
export type LogLine = z.infer<typeof LogLine>;

/**
 * The runtime's status file (`MESH_RUNTIME_STATUS`): each served module's load result, so the host
 * reports a tools module healthy once its tools load, or failing with the reason.
 */
export const RuntimeStatusFile = z.object({
  v: z.literal(1),
  node: z.string(),
  pid: z.number().int(),
  state: z.enum(["starting", "running", "stopping", "stopped", "failed"]),
  at: Instant,
  /** Whether the runtime reaches the bus, and since when (absent from runtimes before it). */
  bus: z.object({ connected: z.boolean(), since: Instant }).optional(),
  modules: z.record(
    z.string(),
    z.object({
      module: z.string(),
      state: z.enum(["starting", "serving", "idle", "failing", "stopped"]),
      tools: z.array(z.string()),
      restarts: z.number().int().nonnegative(),
      since: z.string().optional(),
      error: z.string().optional(),
    }),
  ),
});
export type RuntimeStatusFile = z.infer<typeof RuntimeStatusFile>;

/** A tool as the runtime describes it in its endpoint metadata. */
export const ToolDescription = z
  .object({
    name: z.string().regex(TOOL_NAME_PATTERN),
    description: z.string(),
    input: z.record(z.string(), z.unknown()),
    output: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type ToolDescription = z.infer<typeof ToolDescription>;
