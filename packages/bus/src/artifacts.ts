/**
 * The artifact store: bundle archives in the object store `mesh-artifacts`, named by the SHA-256
 * of their bytes. The digest is computed here on put; a reader verifies it again before use.
 */
import { createHash } from "node:crypto";
import { Objm, type ObjectStore as NatsObjectStore } from "@nats-io/obj";
import { ObjectStore, digestKey } from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { abortable, withContext } from "./bus-errors.js";
import { natsOf } from "./mesh-bus.js";

export interface ArtifactInfo {
  readonly digest: string;
  readonly size: number;
}

export interface ArtifactOpenOptions {
  readonly signal?: AbortSignal;
  /**
   * How often a transient failure (JetStream not answering yet) is retried before it is thrown;
   * 8 by default. A caller that retries the open by itself passes 0.
   */
  readonly transientRetries?: number;
}

export class ArtifactStore {
  readonly #store: NatsObjectStore;

  private constructor(store: NatsObjectStore) {
    this.#store = store;
  }

  /** Opens the store. `Objm` over a JetStream client made without the API check needs no `$JS.API.INFO`. */
  static async open(bus: MeshBus, options: ArtifactOpenOptions = {}): Promise<ArtifactStore> {
    const doing = `opening the object store ${ObjectStore.artifacts}`;
    const store = await withContext(
      { doing },
      () => abortable(new Objm(natsOf(bus).js).open(ObjectStore.artifacts), options.signal, doing),
      options.transientRetries,
    );
    return new ArtifactStore(store);
  }

  /** Stores bytes under their digest and returns it; storing the same bytes again changes nothing. */
  async put(bytes: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<ArtifactInfo> {
    const digest = sha256(bytes);
    const existing = await this.info(digest, options);
    if (existing !== undefined) return existing;
    const doing = `storing artifact ${digest}`;
    await withContext({ doing, key: digest }, () =>
      abortable(this.#store.putBlob({ name: digest }, bytes), options.signal, doing),
    );
    return { digest, size: bytes.byteLength };
  }

  /** The artifact's bytes, or undefined when the store has none by that digest. Not verified here. */
  async get(
    digest: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<Uint8Array | undefined> {
    const doing = `fetching artifact ${digest}`;
    const bytes = await withContext({ doing, key: digest }, () =>
      abortable(this.#store.getBlob(digestKey(digest)), options.signal, doing),
    );
    return bytes ?? undefined;
  }

  async info(
    digest: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<ArtifactInfo | undefined> {
    const doing = `looking up artifact ${digest}`;
    const info = await withContext({ doing, key: digest }, () =>
      abortable(this.#store.info(digestKey(digest)), options.signal, doing),
    );
    return info === null || info.deleted ? undefined : { digest, size: info.size };
  }
}

/** The lowercase hex SHA-256 of bytes: the mesh's content address. */
export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
