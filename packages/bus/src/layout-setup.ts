/**
 * Creates every bucket, stream and the object store of the layout. Only the controller's (admin)
 * credential may do this: no other credential is granted stream creation (docs/design.md, "What the
 * bus enforces"; docs/nats.md §1.2 (f)). Idempotent: what exists is found and left as it is.
 *
 * Each is created with the replicas the bus allows: up to {@link MAX_REPLICAS}, fewer when the
 * bus says it has fewer servers for them (one server: 1; see replicas.ts).
 */
import {
  jetstreamManager,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import {
  Bucket,
  BucketSpec,
  ErrorCode,
  MeshError,
  ObjectStore,
  Stream,
  StreamSpec,
  kvStreamName,
  objStreamName,
} from "@mesh/protocol";
import { delay } from "@mesh/kit";
import { natsOf, type MeshBus } from "./mesh-bus.js";
import { abortable, withContext } from "./bus-errors.js";
import { withAllowedReplicas, waitForJetStream } from "./replicas.js";

export interface LayoutOptions {
  /** The most copies of each stream wanted; the bus may allow fewer. Default MAX_REPLICAS. */
  readonly replicas?: number;
  /** The servers the bus is known to run: a refusal for want of them is waited out. */
  readonly peers?: number;
  readonly signal?: AbortSignal;
}

export interface LayoutReport {
  readonly created: readonly string[];
  readonly found: readonly string[];
  /** The copies of each stream created now (what the bus allowed); undefined when none was. */
  readonly replicas?: number;
}

/** One part of the layout: its name, the stream behind it, and how it is made with N copies. */
interface Part {
  readonly name: string;
  readonly what: string;
  readonly stream: string;
  readonly create: (replicas: number) => Promise<unknown>;
}

function layoutParts(bus: MeshBus, jsm: JetStreamManager): Part[] {
  const buckets = Object.values(Bucket).map((bucket) => ({
    name: bucket,
    what: "bucket",
    stream: kvStreamName(bucket),
    create: (replicas: number) =>
      natsOf(bus).kvm.create(bucket, {
        history: BucketSpec[bucket].history,
        replicas,
        storage: StorageType.File,
      }),
  }));
  const stores = Object.values(ObjectStore).map((store) => ({
    name: store,
    what: "object store",
    stream: objStreamName(store),
    create: (replicas: number) =>
      new Objm(natsOf(bus).js).create(store, { replicas, storage: StorageType.File }),
  }));
  const streams = Object.values(Stream).map((stream) => {
    const spec = StreamSpec[stream];
    return {
      name: stream,
      what: "stream",
      stream,
      create: (replicas: number) =>
        jsm.streams.add({
          name: stream,
          subjects: [...spec.subjects],
          retention: RetentionPolicy.Limits,
          storage: StorageType.File,
          discard: DiscardPolicy.Old,
          num_replicas: replicas,
          max_msgs_per_subject: spec.maxMsgsPerSubject,
          max_age: spec.maxAgeSeconds * 1_000_000_000,
          max_bytes: spec.maxBytes,
        }),
    };
  });
  return [...buckets, ...stores, ...streams];
}

/** Whether a stream-info error says the stream does not exist. */
function isMissing(error: unknown): boolean {
  return (error as { code?: number }).code === 10059 || /not found/i.test((error as Error).message);
}

export async function ensureLayout(
  bus: MeshBus,
  options: LayoutOptions = {},
): Promise<LayoutReport> {
  const jsm = await withContext({ doing: "reaching JetStream" }, () =>
    jetstreamManager(natsOf(bus).nc, { checkAPI: false }),
  );
  // A cluster that has just started answers only once it has elected its meta leader (~5 s).
  await waitForJetStream(bus, options.signal === undefined ? {} : { signal: options.signal });
  let used: number | undefined;
  const created: string[] = [];
  const found: string[] = [];
  const exists = async (stream: string): Promise<boolean> => {
    try {
      await jsm.streams.info(stream);
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  };
  // Buckets first, then the object store, then the streams: the order they are reported in.
  for (const part of layoutParts(bus, jsm)) {
    const doing = `creating the ${part.what} ${part.name}`;
    await withContext({ doing }, async () => {
      if (await abortable(exists(part.stream), options.signal, doing)) {
        found.push(part.name);
        return;
      }
      used = await withAllowedReplicas(
        bus,
        options.replicas,
        (replicas) => abortable(part.create(replicas), options.signal, doing),
        options,
      );
      created.push(part.name);
    });
  }
  await waitForLeaders(
    bus,
    jsm,
    layoutParts(bus, jsm).map((part) => part.stream),
    options.signal,
  );
  return { created, found, ...(used === undefined ? {} : { replicas: used }) };
}

/** How long a cluster may take to elect the leaders of the streams it was just given. */
const LEADERS_TIMEOUT_MS = 120_000;

/**
 * Waits until every stream has a leader. A stream a cluster has just created has none until its
 * copies elect one, and until then a request to it (a consumer for a bucket's keys, a get from
 * its leader) is not answered at all: the caller's first read times out. On a loaded machine the
 * elections of the layout's twenty-odd streams outlast a request's timeout (CI: `mesh up
 * --cluster 3` failed listing mesh-modules right after its layout). A single server's streams
 * carry no cluster and are ready at once.
 */
async function waitForLeaders(
  bus: MeshBus,
  jsm: JetStreamManager,
  streams: readonly string[],
  signal: AbortSignal | undefined,
): Promise<void> {
  const until = Date.now() + LEADERS_TIMEOUT_MS;
  let waiting = [...streams];
  for (;;) {
    const still: string[] = [];
    for (const stream of waiting) {
      try {
        const info = await jsm.streams.info(stream);
        if (info.cluster !== undefined && info.cluster.leader === undefined) still.push(stream);
      } catch {
        still.push(stream); // not answered yet: the same wait
      }
    }
    waiting = still;
    if (waiting.length === 0) return;
    if (Date.now() >= until) {
      throw new MeshError(
        ErrorCode.JETSTREAM_UNAVAILABLE,
        `the bus at ${bus.credential.servers.join(", ")} elected no leader for ${waiting.join(", ")} ` +
          `within ${LEADERS_TIMEOUT_MS} ms; more than half of each stream's servers must be up and ` +
          "reach each other: start the missing servers or check their logs and routes",
      );
    }
    await delay(250, signal === undefined ? {} : { signal });
  }
}

/**
 * Creates a module's state bucket (`<module>_<state>`) unless it exists; true when it made it.
 * Only the controller does this, for the states a wanted manifest declares: a module's own
 * credential may not create streams.
 */
export async function ensureStateBucket(
  bus: MeshBus,
  bucket: string,
  options: LayoutOptions & { readonly history?: number } = {},
): Promise<boolean> {
  const doing = `creating the state bucket ${bucket}`;
  return withContext({ doing }, async () => {
    const jsm = await jetstreamManager(natsOf(bus).nc, { checkAPI: false });
    try {
      await abortable(jsm.streams.info(kvStreamName(bucket)), options.signal, doing);
      return false;
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    await withAllowedReplicas(
      bus,
      options.replicas,
      (replicas) =>
        abortable(
          natsOf(bus).kvm.create(bucket, {
            history: options.history ?? 1,
            replicas,
            storage: StorageType.File,
          }),
          options.signal,
          doing,
        ),
      options,
    );
    return true;
  });
}
