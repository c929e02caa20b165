/**
 * One simulated node for the fleet bench: a light in-process stand-in for a host that joins
 * through the real join path and then speaks the host's protocol honestly, as its own host
 * credential (exactly `hostGrant`): a presence heartbeat with its public key, a watch of its own
 * composition, the two watches of mesh-config a host keeps (mesh-wide keys and its own), every
 * sealed need opened with its private key, and a `mesh-have` report per composed module with the
 * build and the fingerprint a host computes. What it does not do: fetch archives, run processes
 * (a stub runner whose processes start at once and are healthy at once), serve provision asks.
 */
import { KvBucket, MeshBus, generateNodeKeys, requestJoin, unseal } from "@mesh/bus";
import { natsOf } from "@mesh/bus/internal";
import { desiredOf } from "@mesh/host";
import { Bucket, type Composed, type Have } from "@mesh/protocol";

export interface SimOptions {
  readonly servers: readonly string[];
  readonly token: string;
  readonly node: string;
  readonly heartbeatMs: number;
}

export class SimNode {
  readonly node: string;
  readonly bus: MeshBus;
  readonly #keys: ReturnType<typeof generateNodeKeys>;
  readonly #stop = new AbortController();
  readonly #reported = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  /** Opened once: at a beat a second, opening it every beat doubled the requests. */
  #presence: ReturnType<typeof KvBucket.open<typeof Bucket.presence>> | undefined;
  /** When each `<module>@<build>` was first composed here, and first reported healthy (ms). */
  readonly composedAt = new Map<string, number>();
  readonly healthyAt = new Map<string, number>();
  /** Sealed needs opened, and ones that would not open (a wrong key, a damaged value). */
  opened = 0;
  unopened = 0;

  private constructor(node: string, bus: MeshBus, keys: ReturnType<typeof generateNodeKeys>) {
    this.node = node;
    this.bus = bus;
    this.#keys = keys;
  }

  /** Joins with a one-time token (the real `mesh.join`) and connects as the node's host. */
  static async join(o: SimOptions): Promise<SimNode> {
    const keys = generateNodeKeys();
    const credential = await requestJoin({
      servers: o.servers,
      token: o.token,
      node: o.node,
      keys,
      timeoutMs: 300_000,
    });
    const bus = await MeshBus.connect(credential, {
      name: `${o.node}.host`,
      waitForBus: true,
      say: () => undefined,
    });
    const sim = new SimNode(o.node, bus, keys);
    sim.#start(o.heartbeatMs);
    return sim;
  }

  /** Messages this node's connection sent and received so far. */
  messages(): number {
    const s = natsOf(this.bus).nc.stats();
    return s.inMsgs + s.outMsgs;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#stop.abort();
    await this.bus.close();
  }

  #start(heartbeatMs: number): void {
    const beat = (): void => void this.#beat();
    beat();
    this.#timer = setInterval(beat, heartbeatMs);
    void this.#watch(`${this.node}`, Bucket.composed, (c) => this.#composed(c as Composed));
    void this.#watch("*.*", Bucket.config, () => undefined);
    void this.#watch(`*.*.${this.node}`, Bucket.config, () => undefined);
  }

  async #beat(): Promise<void> {
    try {
      this.#presence ??= KvBucket.open(this.bus, Bucket.presence);
      const presence = await this.#presence.catch((error: unknown) => {
        this.#presence = undefined;
        throw error;
      });
      await presence.put(
        this.node,
        {
          node: this.node,
          facts: { hostname: this.node, os: "linux", arch: "x64", version: "0.1.0" },
          publicKey: this.#keys.publicKey,
          heartbeat: new Date().toISOString(),
        },
        { signal: this.#stop.signal },
      );
    } catch {
      // The next heartbeat says it again.
    }
  }

  async #watch(key: string, bucket: Bucket, onPut: (value: unknown) => void): Promise<void> {
    while (!this.#stop.signal.aborted) {
      try {
        const kv = await KvBucket.open(this.bus, bucket);
        for await (const event of kv.watch({ key, signal: this.#stop.signal }))
          if (event.type === "put") onPut(event.value);
      } catch {
        // Watched again below, as a host does.
      }
      await new Promise((r) => setTimeout(r, 1_000).unref());
    }
  }

  #composed(composed: Composed): void {
    void this.#report(composed).catch(() => undefined);
  }

  /** Says in mesh-have how each composed module runs here, as the host would once applied. */
  async #report(composed: Composed): Promise<void> {
    const now = Date.now();
    const desired = desiredOf(composed.resources, () => ({}));
    const waiting = new Set<string>();
    for (const r of composed.resources) {
      if (r.type !== "need") continue;
      if (r.sealed === undefined) {
        waiting.add(r.module);
        continue;
      }
      try {
        unseal(this.#keys.privateKey, r.sealed, r.id);
        this.opened += 1;
      } catch {
        this.unopened += 1;
        waiting.add(r.module);
      }
    }
    const have = await KvBucket.open(this.bus, Bucket.have);
    for (const [module, fingerprint] of desired.modules) {
      const build = composed.modules?.[module]?.build;
      const health: Have["health"] = waiting.has(module) ? "starting" : "healthy";
      const said = `${build ?? ""}/${fingerprint}/${health}`;
      const at = `${module}@${build ?? ""}`;
      if (build !== undefined && !this.composedAt.has(at)) this.composedAt.set(at, now);
      if (this.#reported.get(module) === said) continue;
      await have.put(`${this.node}.${module}`, {
        ...(build === undefined ? {} : { build }),
        fingerprint,
        health,
        since: new Date().toISOString(),
        restarts: 0,
      });
      this.#reported.set(module, said);
      if (health === "healthy" && build !== undefined && !this.healthyAt.has(at))
        this.healthyAt.set(at, Date.now());
    }
  }
}
