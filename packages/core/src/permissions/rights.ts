/**
 * The building blocks of every grant: what one use of the bus (read a bucket, write some keys,
 * read the object store, serve or call a tool, …) needs the credential to publish and subscribe.
 *
 * Each block is the allow list verified in docs/nats.md §1.2 for the client calls the bus
 * helpers make, narrowed where the layout allows, and nothing more. The choices (direct get, no
 * stream info, literal `$SRV` verbs, …) are in docs/decisions/0020-permissions.md.
 *
 * Mesh names (buckets, streams, subjects, inboxes) come from @mesh/protocol's layout; what is
 * spelled here is NATS's own API (`$JS.API`, `$KV`, `$O`, `$SRV`, `$JS.FC`).
 */
import {
  Subject,
  checkName,
  inboxPrefix,
  kvStreamName,
  moduleToolsWildcard,
  objStreamName,
  type Permissions,
} from "@mesh/protocol";

/** What a credential may publish and subscribe to, before it is written out as Permissions. */
export interface Rights {
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
  /** Whether it answers requests it receives (tools, the provisioner client). */
  readonly responses?: true;
  /** Subscribe denies: the server also filters what a wildcard subscription is handed by them. */
  readonly subscribeDeny?: readonly string[];
}

export const NO_RIGHTS: Rights = { publish: [], subscribe: [] };

export function merge(...parts: readonly Rights[]): Rights {
  const subscribeDeny = parts.flatMap((p) => p.subscribeDeny ?? []);
  return {
    publish: parts.flatMap((p) => p.publish),
    subscribe: parts.flatMap((p) => p.subscribe),
    ...(parts.some((p) => p.responses === true) ? { responses: true as const } : {}),
    ...(subscribeDeny.length === 0 ? {} : { subscribeDeny }),
  };
}

/** Everything, for the controller alone. */
export const EVERYTHING = ">";

/**
 * The Permissions the bus config gets: each list sorted (by code unit, so the same on every
 * machine and locale) and without repeats, so the same grant always writes the same bytes.
 * A side that allows nothing is `deny: [">"]`: an empty allow list would allow everything.
 */
export function toPermissions(rights: Rights): Permissions {
  const subscribe = side(rights.subscribe);
  const deny = [...new Set(rights.subscribeDeny ?? [])].sort();
  return {
    publish: side(rights.publish),
    subscribe: "allow" in subscribe && deny.length > 0 ? { ...subscribe, deny } : subscribe,
    ...(rights.responses === true ? { allowResponses: true } : {}),
  };
}

function side(subjects: readonly string[]): { allow: string[] } | { deny: string[] } {
  const sorted = [...new Set(subjects)].sort();
  return sorted.length === 0 ? { deny: [EVERYTHING] } : { allow: sorted };
}

// ---------------------------------------------------------------------------------------------
// Key-value buckets. The bus opens buckets with `new Kvm(nc).open(name, { allow_direct: true })`,
// so a get is `$JS.API.DIRECT.GET.<stream>.$KV.<bucket>.<key>`: the key is in the subject and can
// be granted key by key. `STREAM.MSG.GET` (plain `kvm.open(name)`) carries the key in the body and
// would let a per-key reader read every key. Get by revision (`DIRECT.GET.<stream>` with a body)
// has the same flaw and is granted to no one: the bus reads old revisions through history().

const kvSubjects = (bucket: string, keys: string): string => `$KV.${bucket}.${keys}`;

/** get, watch, history and keys over a whole bucket (docs/nats.md §1.2 (a), direct get). */
export function kvRead(bucket: string): Rights {
  const stream = kvStreamName(bucket);
  return {
    publish: [
      ...kvGet(bucket, ">").publish,
      ...kvWatch(bucket, ">").publish,
      // keys() asks for its consumer's info; only whole-bucket readers list keys.
      `$JS.API.CONSUMER.INFO.${stream}.*`,
    ],
    subscribe: [],
  };
}

/**
 * get of the keys `keys` (a literal key, or a prefix ending in `.>`) and nothing else. Never give
 * a pattern with `*` in it: the client may put a literal `>` there and read deeper keys.
 */
export function kvGet(bucket: string, keys: string): Rights {
  return {
    publish: [`$JS.API.DIRECT.GET.${kvStreamName(bucket)}.${kvSubjects(bucket, keys)}`],
    subscribe: [],
  };
}

/**
 * watch and history of the keys `keys`. On 2.9 the consumer's filter is in the create subject and
 * must equal its config's filter, so this really bounds what the consumer delivers. Flow control
 * replies go with every consumer: without them a large watch stalls silently (docs/nats.md §1.2).
 */
export function kvWatch(bucket: string, keys: string): Rights {
  const stream = kvStreamName(bucket);
  return {
    publish: [
      `$JS.API.CONSUMER.CREATE.${stream}.*.${kvSubjects(bucket, keys)}`,
      `$JS.FC.${stream}.>`,
    ],
    subscribe: [],
  };
}

/** put, create, update, delete and purge of the keys `keys` (docs/nats.md §1.2 (b)). */
export function kvWrite(bucket: string, keys = ">"): Rights {
  return { publish: [kvSubjects(bucket, keys)], subscribe: [] };
}

/** Read and write a whole bucket: a module's own state, a principal's own buckets. */
export const kvReadWrite = (bucket: string): Rights => merge(kvRead(bucket), kvWrite(bucket));

/**
 * A whole bucket read, also through the stream's leader (`STREAM.MSG.GET`, the key in the body):
 * for a reader that must be answered by a current copy (decision 0210). It reads every key
 * anyway, so the key in the body widens nothing.
 */
export const kvReadFromLeader = (bucket: string): Rights =>
  merge(kvRead(bucket), {
    publish: [`$JS.API.STREAM.MSG.GET.${kvStreamName(bucket)}`],
    subscribe: [],
  });

/**
 * A module's own state: read-write, and also read through the stream's leader
 * (`STREAM.MSG.GET`, the key in the body). A direct get is answered by any copy, one still
 * catching up included, so a daemon that reads its total at start after a server died could read
 * an older one and write it back over acknowledged writes. The owner may read every key anyway,
 * so the key in the body widens nothing.
 */
export const kvOwn = (bucket: string): Rights =>
  merge(kvReadWrite(bucket), {
    publish: [`$JS.API.STREAM.MSG.GET.${kvStreamName(bucket)}`],
    subscribe: [],
  });

// ---------------------------------------------------------------------------------------------
// The object store, opened as `new Objm(jetstream(nc, { checkAPI: false })).open(name)`: no
// `$JS.API.INFO` (that comes only with the default checkAPI), one STREAM.INFO for open's check.

/**
 * get and getBlob by name (docs/nats.md §1.2 (c)): metadata by STREAM.MSG.GET (the object store
 * never uses direct get), chunks through a consumer on `$O.<store>.C.<nuid>`. Listing and watching
 * (`$O.<store>.M.>`) only when `list` is set: fetching an archive by its digest does not need it.
 */
export function objRead(store: string, { list = false }: { list?: boolean } = {}): Rights {
  const stream = objStreamName(store);
  return {
    publish: [
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.STREAM.MSG.GET.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.*.$O.${store}.C.>`,
      ...(list ? [`$JS.API.CONSUMER.CREATE.${stream}.*.$O.${store}.M.>`] : []),
      `$JS.FC.${stream}.>`,
    ],
    subscribe: [],
  };
}

/**
 * put and putBlob (@nats-io/obj 3.4 `_put`): open's STREAM.INFO; info() of the name first
 * (STREAM.MSG.GET); the chunks on `$O.<store>.C.<nuid>` and the metadata on `$O.<store>.M.<name>`
 * as JetStream publishes (acks come to the inbox); then STREAM.PURGE, which put sends to drop the
 * old chunks when a name is replaced and to drop the new chunks when a put fails half-way.
 * Without PURGE a failed put leaks its chunks and reports the purge's permission error instead
 * of its own. Purge is not stream creation: the writer could already delete every object through
 * the metadata subjects, so it gains no reach it did not have.
 */
export function objWrite(store: string): Rights {
  const stream = objStreamName(store);
  return {
    publish: [
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.STREAM.MSG.GET.${stream}`,
      `$JS.API.STREAM.PURGE.${stream}`,
      `$O.${store}.C.>`,
      `$O.${store}.M.>`,
    ],
    subscribe: [],
  };
}

// ---------------------------------------------------------------------------------------------
// Streams that are not buckets (conditions, logs).

/**
 * Read the messages of `stream` under `filter` with an ordered push consumer
 * (`js.consumers.getPushConsumer(stream, { filter_subjects: filter })`, one string filter): one
 * CONSUMER.CREATE with the filter in its subject, flow control, deliveries to the inbox. The bus
 * must always pass a filter: without one the client asks for `>`, which this grant refuses.
 */
export function streamRead(stream: string, filter: string): Rights {
  return {
    publish: [`$JS.API.CONSUMER.CREATE.${stream}.*.${filter}`, `$JS.FC.${stream}.>`],
    subscribe: [],
  };
}

// ---------------------------------------------------------------------------------------------
// Services and requests.

/**
 * The `$SRV` verbs, spelled out instead of `$SRV.*`: a subscribe allow of `$SRV.*` also lets the
 * client subscribe to `$SRV.>` and see (and, with allowResponses, answer) every service's
 * discovery (verified on 2.9.10). A service subscribes to exactly these nine subjects.
 */
const SRV_VERBS = ["PING", "INFO", "STATS"] as const;

/**
 * Serve `module`'s tools on `node` as the NATS service named after the module
 * (docs/nats.md §1.2 (d)): its endpoints, the discovery subjects, and replies to the caller's
 * inbox.
 */
export function serveTools(node: string, module: string): Rights {
  return {
    publish: [],
    subscribe: [
      moduleToolsWildcard(node, module),
      ...SRV_VERBS.flatMap((verb) => [
        `$SRV.${verb}`,
        `$SRV.${verb}.${module}`,
        `$SRV.${verb}.${module}.*`,
      ]),
    ],
    responses: true,
  };
}

/**
 * The discovery subjects of one NATS service named `name`, which the services client subscribes
 * to whenever it serves anything (the host's provisioner client): without them the server logs
 * nine violations per start and discovery does not find it.
 */
export function serviceDiscovery(name: string): Rights {
  return {
    publish: [],
    subscribe: SRV_VERBS.flatMap((verb) => [
      `$SRV.${verb}`,
      `$SRV.${verb}.${name}`,
      `$SRV.${verb}.${name}.*`,
    ]),
    responses: true,
  };
}

/**
 * Call `module`'s `tool` on whichever node serves it: the caller cannot know the node in advance,
 * and any node's endpoint is the same tool of the same module. Discovery of that one service
 * (PING, INFO) finds the nodes; STATS is not needed to call and the rest of `$SRV` is other
 * modules' business (docs/nats.md §1.2 (e) grants `$SRV.>`; this is the part a caller uses).
 */
export function callTool(module: string, tool: string): Rights {
  checkName("module", module);
  checkName("tool", tool);
  return {
    publish: [
      `${Subject.toolsPrefix}.*.${module}.${tool}`,
      `$SRV.PING.${module}`,
      `$SRV.INFO.${module}`,
    ],
    subscribe: [],
  };
}

/** Call every tool and discover every service: the operator. */
export const callAnyTool = (): Rights => ({
  publish: [`${Subject.toolsPrefix}.>`, "$SRV.>"],
  subscribe: [],
});

/**
 * The credential's own inbox: request replies, JetStream acks and the deliveries of its
 * consumers (the client's watcherPrefix defaults to the inbox prefix) all come here.
 */
export const inbox = (node: string, module: string): Rights => ({
  publish: [],
  subscribe: [`${inboxPrefix(node, module)}.>`],
});

/**
 * NATS's default inbox, for a credential that speaks like the `nats` CLI and every stock client:
 * request replies on `_INBOX.<nuid>.<token>`, consumer deliveries on `_INBOX.<nuid>`. Every mesh
 * credential but the operator's has its own prefix, `_INBOX.<node>.<module>`, so its traffic is
 * four tokens or more. The server matches a subscription's subject literally, so `_INBOX.*.*`
 * would also admit a subscription to `_INBOX.*.>` (and `_INBOX.*` one to `_INBOX.>`) and with it
 * every other credential's replies; the deny of four tokens and more is what the server then
 * filters such a wildcard subscription's deliveries with (verified on 2.9.10, decision 0070).
 */
export const defaultInbox: Rights = {
  publish: [],
  subscribe: [`${Subject.inboxRoot}.*`, `${Subject.inboxRoot}.*.*`],
  subscribeDeny: [`${Subject.inboxRoot}.*.*.>`],
};

/**
 * The JetStream API's read-only requests the stock tools make to list and describe streams,
 * consumers and the account (`nats stream ls`, `nats kv ls`, `jetstreamManager()`'s check): names,
 * lists, infos. None reads a message or changes anything; the data stays behind the per-bucket
 * grants.
 */
export const jetStreamReadOnly: Rights = {
  publish: [
    "$JS.API.INFO",
    "$JS.API.STREAM.NAMES",
    "$JS.API.STREAM.LIST",
    "$JS.API.STREAM.INFO.*",
    "$JS.API.CONSUMER.NAMES.*",
    "$JS.API.CONSUMER.LIST.*",
    "$JS.API.CONSUMER.INFO.*.*",
  ],
  subscribe: [],
};

/** Reply to the requests it receives (the provisioner client's answers). */
export const answerRequests: Rights = { publish: [], subscribe: [], responses: true };

/** Plain publishes to subjects (a stream may capture them; its ack goes to the inbox). */
export const publishTo = (...subjects: string[]): Rights => ({ publish: subjects, subscribe: [] });

export const subscribeTo = (...subjects: string[]): Rights => ({
  publish: [],
  subscribe: subjects,
});
