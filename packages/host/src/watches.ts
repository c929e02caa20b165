/**
 * The host's watches of the bus: its node's composition and the mesh-config keys it reads, kept
 * by the bus's mirror, which watches again (with the kit's backoff) when a watch ends or stalls
 * and applies what it missed meanwhile. A new connection starts them anew. Each source is
 * optional: the host never stops for a bus it cannot hear, it goes on with what it applied.
 */
import {
  Mirror,
  openedOnWatch,
  skippingInvalid,
  type MeshBus,
  type MirrorChange,
  type Sources,
} from "@mesh/bus";
import { Bucket, nodeKey, type Composed, type ConfigValue } from "@mesh/protocol";
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

type Json = ConfigValue["value"];

export class Watches {
  readonly #o: WatchesOptions;
  #mirror: AsyncDisposable | undefined;
  /** The mirror being stopped: a stop waits for it before it closes the bus. */
  #stopping: Promise<void> = Promise.resolve();

  constructor(options: WatchesOptions) {
    this.#o = options;
  }

  /** Ends the watches and resolves once they are done. */
  async stop(): Promise<void> {
    this.#end();
    await this.#stopping;
  }

  /** (Re)starts the watches of the composition and of config on `bus`. */
  start(bus: MeshBus): void {
    this.#end();
    if (this.#o.signal.aborted) return;
    this.#mirror = Mirror.start({
      sources: this.#sources(bus),
      touched: (change) => {
        this.#touched(change);
        return [];
      },
      log: this.#o.log,
    });
  }

  #end(): void {
    const mirror = this.#mirror;
    this.#mirror = undefined;
    if (mirror !== undefined)
      this.#stopping = Promise.all([this.#stopping, mirror[Symbol.asyncDispose]()]).then(
        () => undefined,
      );
  }

  #sources(bus: MeshBus): Sources {
    const { node, log, store } = this.#o;
    const config = skippingInvalid(openedOnWatch(bus, Bucket.config), (key, problem) =>
      log(`ignored an invalid config value for ${key}: ${problem.message}`),
    );
    // What the host kept is where each starts: a key a fresh watch does not hand was deleted
    // while the host was away, and goes.
    const kept = (parts: number): Map<string, Json> =>
      new Map(
        Object.entries(store.config as Record<string, Json>).filter(
          ([key]) => key.split(".").length === parts,
        ),
      );
    const inner = (_: Json | undefined, value: ConfigValue | undefined) => value?.value;
    return {
      composed: {
        optional: true,
        key: nodeKey(node),
        bucket: skippingInvalid(openedOnWatch(bus, Bucket.composed), (_, problem) =>
          log(`ignored an invalid composition: ${problem.message}`),
        ),
      },
      // Only the config keys this node reads: mesh-wide (`<module>.<key>`) and its own
      // (`<module>.<key>.<node>`); another node's values never reach this host.
      config: { optional: true, key: "*.*", bucket: config, into: kept(2), fold: inner },
      "own config": {
        optional: true,
        key: `*.*.${node}`,
        bucket: config,
        into: kept(3),
        fold: inner,
      },
    };
  }

  #touched({ source, key, after }: MirrorChange): void {
    const { node, provisioner, store } = this.#o;
    if (source === "composed") {
      this.#o.onComposed(
        (after as Composed | undefined) ?? { node, resources: [], fingerprint: "none" },
      );
      return;
    }
    provisioner.setConfig(key, after as Json | undefined);
    store.setConfig(key, after);
    this.#o.onConfig();
  }
}
