/**
 * The bus permissions of the mesh's own principals: the host, the operator, the view, the build
 * modules, a renewal and the controller. The assigner's and delivery's come from their parts'
 * manifests (`parts.ts`, decision 0122). What each list holds and why is in docs/decisions/0020-permissions.md.
 */
import {
  Bucket,
  ErrorCode,
  MeshError,
  MeshPart,
  ObjectStore,
  PROVISION_SERVICE,
  Principal,
  HOST_MODULE,
  RUNTIME_MODULE,
  hostUpgradeCondition,
  hostVersionCondition,
  Stream,
  StreamSpec,
  Subject,
  ViewPrincipal,
  conditionSubject,
  moduleConditionsWildcard,
  nodeKey,
  provisionChangedSubject,
  provisionModuleChangedWildcard,
  provisionModuleWildcard,
  provisionSubject,
  renewSubject,
  type Permissions,
} from "@mesh/protocol";
import {
  EVERYTHING,
  answerRequests,
  callAnyTool,
  defaultInbox,
  jetStreamReadOnly,
  inbox,
  kvGet,
  kvRead,
  kvReadFromLeader,
  kvReadWrite,
  kvWatch,
  kvWrite,
  merge,
  objRead,
  objWrite,
  publishTo,
  serviceDiscovery,
  streamRead,
  subscribeTo,
  toPermissions,
  type Rights,
} from "./rights.js";

/**
 * A node's host: its own node's keys only where the layout keys by node. It watches its
 * composition; writes its presence and what it runs (and gets its own `have` back after a
 * restart, to carry `since` and `restarts` on); fetches archives by digest; reads config to
 * answer its runtime's provision asks, and says when a value moved; publishes its processes'
 * output.
 *
 * `mesh-config` is read whole: its keys end in the node (`<module>.<key>.<node>`), and a grant of
 * `*.*` plus `*.*.<node>` is widened by a client to `*.>` (see docs/decisions/0020). Config holds
 * no secrets (those are in `mesh-secrets`, the controller's alone).
 */
export function hostGrant(input: { readonly node: string }): Permissions {
  const { node } = input;
  const ownKey = nodeKey(node);
  return toPermissions(
    merge(
      kvGet(Bucket.composed, ownKey),
      kvWatch(Bucket.composed, ownKey),
      kvWrite(Bucket.presence, ownKey),
      kvWrite(Bucket.have, `${ownKey}.>`),
      kvGet(Bucket.have, `${ownKey}.>`),
      objRead(ObjectStore.artifacts),
      // Through the leader: what it serves its runtime is what the cluster acknowledged.
      kvReadFromLeader(Bucket.config),
      subscribeTo(provisionSubject(node), provisionModuleWildcard(node)),
      // The provisioner client is a NATS service: its discovery subjects come with it.
      serviceDiscovery(PROVISION_SERVICE),
      answerRequests,
      publishTo(
        provisionChangedSubject(node),
        provisionModuleChangedWildcard(node),
        `${Subject.logsPrefix}.${ownKey}.*`,
      ),
      // Says when a runtime it replaced left a module that the new one did not bring up.
      publishTo(conditionSubject(RUNTIME_MODULE, "handover")),
      // Says, of its own node only, a host build that did not take it over and a composition it
      // is too old for (decisions 0200, 0202).
      publishTo(
        conditionSubject(HOST_MODULE, hostUpgradeCondition(node)),
        conditionSubject(HOST_MODULE, hostVersionCondition(node)),
      ),
      inbox(node, Principal.host),
    ),
  );
}

/**
 * The operator's CLI (and anything speaking as the operator). Reads every mesh bucket but the
 * secrets (sealed with the vault's key: only the controller can use them); writes what
 * docs/design.md says the operator writes (assignments, puts, retries, answers, config, rollout
 * policies and steers, config rollouts) and
 * registrations (`mesh-modules`: the CLI checks the manifest itself and registers it directly, see
 * docs/decisions/0020); calls every tool and discovers every service; reads the conditions and logs
 * streams; asks the controller for join tokens and to set secrets. Creates and deletes no stream or
 * bucket.
 *
 * The operator's connections use NATS's default inbox, not `_INBOX.<node>.operator`, so stock
 * tools (`nats kv ls`, `nats micro ls`, `nats req`) work with the operator's context as written
 * by `mesh context`.
 */
export function operatorGrant(_input: { readonly node: string }): Permissions {
  // The operator speaks like the `nats` CLI (decision 0070): the default inbox.
  return toPermissions(merge(operatorRights(), defaultInbox));
}

/**
 * Every bucket but the secrets, the conditions, the logs and the tools' counts: what the operator reads, with the
 * read-only JetStream API that lists streams and buckets.
 */
function operatorReads(): Rights {
  const reads = Object.values(Bucket).filter((b) => b !== Bucket.secrets);
  return merge(
    // `mesh config get` reads what the cluster acknowledged, through the leader (decision 0210).
    ...reads.map((b) => (b === Bucket.config ? kvReadFromLeader(b) : kvRead(b))),
    streamRead(Stream.conditions, streamFilter(Stream.conditions)),
    streamRead(Stream.logs, streamFilter(Stream.logs)),
    streamRead(Stream.toolStats, streamFilter(Stream.toolStats)),
    jetStreamReadOnly,
  );
}

/** The operator's rights but its inbox, which the operator and the view's principals differ in. */
function operatorRights(): Rights {
  const writes: readonly Bucket[] = [
    Bucket.assignments,
    Bucket.puts,
    Bucket.retries,
    Bucket.answers,
    Bucket.config,
    Bucket.modules,
    Bucket.rolloutPolicies,
    Bucket.rolloutSteers,
    Bucket.configRollouts,
  ];
  return merge(
    operatorReads(),
    ...writes.map((b) => kvWrite(b)),
    callAnyTool(),
    // Join tokens and secrets (set, list names, unset) go through the controller, which alone
    // holds the broker and vault.
    publishTo(Subject.joinToken, Subject.secretSet, Subject.secretList, Subject.secretUnset),
    // `mesh mcp --allow`: a credential narrowed to some modules, which the broker issues; and
    // `mesh view --listen`: the credentials its sessions act with (decision 0171).
    publishTo(Subject.mcpCredential, Subject.viewCredential),
    // `mesh conditions resolve`: the controller says it resolved (the operator does not
    // speak as a module).
    publishTo(Subject.conditionResolve),
  );
}

/**
 * What a session of `mesh view --listen` acts as (decision 0171): with `operate`, the operator's
 * rights; with `read`, the operator's reads and nothing that changes the mesh (no bucket write, no
 * tool call, no ask of the controller), so the bus refuses a read-only session's action whatever
 * the page sends. Either says conditions as `view` only: the record of who did what. Neither asks
 * for a view credential itself.
 */
export function viewGrant(input: {
  readonly node: string;
  readonly access: "operate" | "read";
}): Permissions {
  // Its own inbox, `_INBOX.<node>.view[-read]`, as every mesh credential but the operator's.
  const own = merge(
    publishTo(`${Subject.conditionsPrefix}.${VIEW_CONDITION_MODULE}.>`),
    inbox(input.node, ViewPrincipal[input.access]),
  );
  if (input.access === "read") return toPermissions(merge(operatorReads(), own));
  const operator = operatorRights();
  return toPermissions(
    merge(
      { ...operator, publish: operator.publish.filter((p) => p !== Subject.viewCredential) },
      own,
    ),
  );
}

/** The module the view's action records are conditions of. */
export const VIEW_CONDITION_MODULE = "view";

/**
 * A build module (decision 0160): it says its language in `mesh-build-modules`, answers the
 * builder's asks on `mesh.build.<language>` as a NATS service (its discovery subjects with it),
 * reads the source archive and stores the built archives in the object store. It replies to the
 * builder's inbox by a grant, not only by the server's response permissions: a build outlasts
 * the users reloads every composition change makes, and nats-server 2.9 forgets those on each.
 */
export function buildGrant(input: { readonly node: string }): Permissions {
  return toPermissions(
    merge(
      kvReadWrite(Bucket.buildModules),
      objRead(ObjectStore.artifacts),
      objWrite(ObjectStore.artifacts),
      subscribeTo(`${Subject.buildPrefix}.*`),
      // Discovery of any build module's service: `$SRV.<verb>[.<name>[.<id>]]`.
      subscribeTo(...["PING", "INFO", "STATS"].flatMap((v) => [`$SRV.${v}`, `$SRV.${v}.>`])),
      answerRequests,
      // The builder's inbox: the module mesh-builder's as its host runs it (decision 0190), or
      // the principal delivery's of `mesh builder --credential`.
      publishTo(`${Subject.inboxRoot}.*.${Principal.delivery}.>`),
      publishTo(`${Subject.inboxRoot}.*.${MeshPart.builder}.>`),
      publishTo(moduleConditionsWildcard(Principal.build)),
      inbox(input.node, Principal.build),
    ),
  );
}

/**
 * A node's renewal login (decision 0150): a host whose own JWT expired while it was away asks
 * with it for its current credential, and may do nothing else — the answer is sealed to the
 * node's key, so whoever else holds this login learns nothing from it.
 */
export function renewalGrant(input: { readonly node: string }): Permissions {
  const { node } = input;
  return toPermissions(merge(publishTo(renewSubject(node)), inbox(node, Principal.renewal)));
}

/**
 * The controller is the bus's admin: it creates every bucket and stream, writes the user list,
 * composes, keeps the vault, and answers joins. It is the only credential that may create,
 * update or delete streams (`$JS.API.STREAM.CREATE/UPDATE/DELETE`): a stream's subjects are not
 * checked against its creator's permissions, so anyone else holding these could capture any
 * subject (docs/nats.md §1.2 (f)).
 */
export function controllerGrant(): Permissions {
  return { publish: { allow: [EVERYTHING] }, subscribe: { allow: [EVERYTHING] } };
}

/** Every subject a stream captures, as one consumer filter (each stream has one subject). */
export function streamFilter(stream: Stream): string {
  const [subject, ...rest] = StreamSpec[stream].subjects;
  if (subject === undefined || rest.length > 0) {
    // A consumer on 2.9 takes one filter; a second subject would need a second consumer and grant.
    throw new MeshError(
      ErrorCode.INTERNAL,
      `the stream ${stream} captures ${StreamSpec[stream].subjects.length} subjects; its readers' grant expects exactly one`,
    );
  }
  return subject;
}
