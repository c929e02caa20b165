/**
 * The host's bus side: connects (waiting for the bus as long as it takes), opens the artifact
 * store and mesh-have, answers the runtime's provision asks, writes the presence (`beat`, which
 * the host's reconciler asks for every heartbeat), and says when the bus goes and comes back.
 * What runs keeps running without it.
 */
import { ArtifactStore, KvBucket, MeshBus, serve, type NodeKeys, type Served } from "@mesh/bus";
import { retry, type BackoffPolicy } from "@mesh/kit";
import {
  Bucket,
  MESH_VERSION,
  PROVISION_SERVICE,
  nodeKey,
  type Credential,
  type Have,
} from "@mesh/protocol";
import { presenceOf } from "./presence.js";
import { provisionEndpoints, type Provisioner } from "./provisioner.js";

/** The version a host reports in its presence: the mesh's own. */
export const HOST_VERSION = MESH_VERSION;

/** Between presence heartbeats, unless told otherwise; readers judge a node gone from it. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

/** Between attempts to open the host's bus side (a bus without JetStream for a while). */
const OPEN_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 10_000 };

export interface ConnectionOptions {
  readonly node: string;
  readonly root: string;
  readonly keys: NodeKeys;
  readonly provisioner: Provisioner;
  /** Between attempts to open the bus side; 0.5 s doubling to 10 s by default. */
  readonly openBackoff?: BackoffPolicy;
  readonly account?: { readonly name: string; readonly home?: string };
  readonly adopted?: boolean;
  /** Connected and the bus side open: the have is there to read back, the watches to start, the presence to say. */
  readonly onConnected: (bus: MeshBus) => Promise<void>;
  /** Back after a loss: say everything again (the presence too), watch again. */
  readonly onReconnected: (bus: MeshBus) => void;
  /** The host's credential file: each login reads it as it is then (a renewed one; 0150). */
  readonly credentialFile?: string;
  /** The bus refused the host's login (its credential expired while it was away, say). */
  readonly onRefused?: () => void;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

export class Connection {
  readonly #o: ConnectionOptions;
  #bus: MeshBus | undefined;
  #artifacts: ArtifactStore | undefined;
  #have: KvBucket<Have> | undefined;
  #served: Served | undefined;
  /** Whether the bus side is open (the presence is written from then on). */
  #opened = false;

  constructor(options: ConnectionOptions) {
    this.#o = options;
  }

  /** The bus once connected (the host runs without it). */
  get bus(): MeshBus | undefined {
    return this.#bus;
  }
  get artifacts(): ArtifactStore | undefined {
    return this.#artifacts;
  }
  get have(): KvBucket<Have> | undefined {
    return this.#have;
  }
  /** Whether the host reaches the bus now. */
  get connected(): boolean {
    return this.#bus?.connection.status === "connected";
  }

  /** Connects and follows the connection until the stop signal; resolves once set up. */
  async connect(credential: Credential): Promise<void> {
    let bus: MeshBus;
    try {
      // The bus's own retry loop ends on the stop signal, and closes what connects after it.
      bus = await MeshBus.connect(credential, {
        waitForBus: true,
        name: `${this.#o.node}.host`,
        signal: this.#o.signal,
        ...(this.#o.credentialFile === undefined ? {} : { follow: this.#o.credentialFile }),
        ...(this.#o.onRefused === undefined ? {} : { onRefused: this.#o.onRefused }),
      });
    } catch (error) {
      if (!this.#o.signal.aborted) this.#o.log(`cannot reach the bus: ${(error as Error).message}`);
      return;
    }
    if (this.#o.signal.aborted) {
      await bus.close();
      return;
    }
    this.#bus = bus;
    this.#o.log(`connected to the bus`);
    const { signal } = this.#o;
    // Said from the start, also while the bus side opens; what comes back waits for it below.
    bus.onConnection(
      (now) => {
        if (now.status === "away") this.#o.log("lost the bus; what runs keeps running");
      },
      { signal },
    );
    await this.#open(bus);
    if (signal.aborted) return; // stopped while the bus side would not open: close() ends it
    this.#opened = true;
    await this.#o.onConnected(bus);
    bus.onConnection(
      (now) => {
        if (now.status !== "connected" || now.lastOutage === undefined) return;
        const { lost, back } = now.lastOutage;
        const away = (Date.parse(back) - Date.parse(lost)) / 1000;
        this.#o.log(
          `the bus is back (${now.server}) after ${away.toFixed(1)} s away, since ${lost}; what ran kept running`,
        );
        this.#o.onReconnected(bus);
      },
      { signal },
    );
  }

  /** Stops answering and closes the bus (after the watches ended). */
  async close(): Promise<void> {
    await this.#served?.stop().catch(() => undefined);
    await this.#bus?.close();
  }

  /**
   * Opens the artifact store and mesh-have and serves the provision asks, each tried again until
   * it opens: a bus reloading or without JetStream for a while (`jetstream is not enabled`, no
   * responders, timeouts) is waited out, never left half open for the rest of the run.
   */
  async #open(bus: MeshBus): Promise<void> {
    const { signal } = this.#o;
    try {
      await retry(
        async () => {
          // This loop is the retry: the store's own retries of JetStream not answering would
          // only hold back each attempt's line (8 of them, 6.5–8 s).
          this.#artifacts ??= await ArtifactStore.open(bus, { signal, transientRetries: 0 });
          this.#have ??= await KvBucket.open(bus, Bucket.have);
          this.#served ??= await this.#serve(bus);
        },
        {
          policy: this.#o.openBackoff ?? OPEN_BACKOFF,
          isRetriable: () => true,
          signal,
          onRetry: ({ error, delayMs }) =>
            this.#o.log(`cannot use the bus yet (${error.message}); trying again in ${delayMs} ms`),
        },
      );
    } catch (error) {
      if (!signal.aborted) throw error;
    }
  }

  #serve(bus: MeshBus): Promise<Served> {
    return serve(bus, {
      name: PROVISION_SERVICE,
      version: HOST_VERSION,
      description: `answers ${this.#o.node}'s runtime's provision asks`,
      endpoints: provisionEndpoints(this.#o.node, this.#o.provisioner),
      onRejected: (why, subject) => this.#o.log(`rejected a provision ask on ${subject}: ${why}`),
      onInternalError: (error) => this.#o.log(`provision ask failed: ${String(error)}`),
    });
  }

  /**
   * Writes the presence (facts, the node's key, the last outage) once the bus side is open;
   * nothing before. A write that fails is said, never thrown: the next heartbeat tries again.
   */
  async beat(): Promise<void> {
    const bus = this.#bus;
    if (bus === undefined || !this.#opened) return;
    // The last time the bus was away, said in the presence once it is back.
    const { lastOutage } = bus.connection;
    try {
      const presence = await KvBucket.open(bus, Bucket.presence);
      await presence.put(
        nodeKey(this.#o.node),
        presenceOf({
          node: this.#o.node,
          publicKey: this.#o.keys.publicKey,
          version: HOST_VERSION,
          now: new Date(),
          root: this.#o.root,
          ...(this.#o.account === undefined ? {} : { account: this.#o.account }),
          ...(this.#o.adopted === undefined ? {} : { adopted: this.#o.adopted }),
          ...(lastOutage === undefined ? {} : { lastOutage }),
        }),
        { signal: this.#o.signal },
      );
    } catch (error) {
      if (!this.#o.signal.aborted) this.#o.log(`presence not written: ${(error as Error).message}`);
    }
  }
}
