/**
 * The host's watches of the bus: its node's composition and mesh-config. Each runs in a loop that
 * watches again when a watch ends with an error; a new connection starts them anew.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { Bucket, ErrorCode, isMeshError, nodeKey, type Composed } from "@mesh/protocol";
import type { AppliedStore } from "./applied-state.js";
import type { Provisioner } from "./provisioner.js";

export interface WatchesOptions {
  readonly node: string;
  readonly store: AppliedStore;
  readonly provisioner: Provisioner;
  /** A composition arrived (or the node's was deleted: an empty one). */
  readonly onComposed: (composed: Composed) => void;
  /** Config changed: apply again. */
  readonly onConfig: () => void;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

export class Watches {
  readonly #o: WatchesOptions;
  #watches: AbortController | undefined;
  /** The watch loops running: a stop waits for them before it closes the bus, or a watch still
   * starting leaks the client's heartbeat timer. */
  readonly #following = new Set<Promise<void>>();

  constructor(options: WatchesOptions) {
    this.#o = options;
  }

  /** Ends the watches and resolves once their loops are done. */
  async stop(): Promise<void> {
    this.#watches?.abort();
    await Promise.allSettled([...this.#following]);
  }

  /** (Re)starts the watches of the composition and of config. */
  start(bus: MeshBus): void {
    this.#watches?.abort();
    const watches = new AbortController();
    this.#watches = watches;
    const signal = AbortSignal.any([watches.signal, this.#o.signal]);
    const node = this.#o.node;
    void this.#follow("the composition", signal, async () => {
      const composed = await KvBucket.open(bus, Bucket.composed);
      for await (const event of composed.watch({ key: nodeKey(node), signal })) {
        if (event.type === "put") this.#o.onComposed(event.value);
        else if (event.type === "delete")
          this.#o.onComposed({ node, resources: [], fingerprint: "none" });
        else if (event.type === "invalid")
          this.#o.log(`ignored an invalid composition: ${event.problem.message}`);
      }
    });
    // Only the keys this node reads: mesh-wide (`<module>.<key>`) and its own
    // (`<module>.<key>.<node>`); another node's values never reach this host.
    this.#followConfig(bus, signal, "*.*", (key) => key.split(".").length === 2);
    this.#followConfig(bus, signal, `*.*.${node}`, (key) => key.split(".").length === 3);
  }

  /** Follows the config keys `filter` names; `mine` says which kept keys that filter covers. */
  #followConfig(
    bus: MeshBus,
    signal: AbortSignal,
    filter: string,
    mine: (key: string) => boolean,
  ): void {
    void this.#follow(`config ${filter}`, signal, async () => {
      const config = await KvBucket.open(bus, Bucket.config);
      const { provisioner, store } = this.#o;
      // Keys deleted while the host was away are not handed by a new watch: what it does not
      // hand by its `current` marker is gone.
      const seen = new Set<string>();
      let current = false;
      for await (const event of config.watch({ key: filter, signal })) {
        if (event.type === "current") {
          current = true;
          provisioner.retainConfig(seen, mine);
          store.retainConfig(seen, mine);
        } else if (event.type === "put") {
          if (!current) seen.add(event.key);
          provisioner.setConfig(event.key, event.value.value);
          store.setConfig(event.key, event.value.value);
        } else if (event.type === "delete") {
          provisioner.setConfig(event.key, undefined);
          store.setConfig(event.key, undefined);
        }
        if (event.type !== "invalid") this.#o.onConfig();
      }
    });
  }

  #follow(what: string, signal: AbortSignal, fn: () => Promise<void>): Promise<void> {
    const loop = this.#followLoop(what, signal, fn);
    this.#following.add(loop);
    void loop.finally(() => this.#following.delete(loop));
    return loop;
  }

  async #followLoop(what: string, signal: AbortSignal, fn: () => Promise<void>): Promise<void> {
    while (!signal.aborted) {
      try {
        await fn();
      } catch (error) {
        if (signal.aborted || isMeshError(error, ErrorCode.ABORTED)) return;
        this.#o.log(`watching ${what} failed (${(error as Error).message}); watching again`);
      }
      await new Promise((r) => setTimeout(r, 1_000).unref());
    }
  }
}
