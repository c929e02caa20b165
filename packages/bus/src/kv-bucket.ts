/**
 * A key-value bucket whose values are JSON checked against a schema. Reads parse before they are
 * trusted; writes check before they leave. Every call takes an AbortSignal.
 */
import type { KV, KvEntry, KvWatchEntry } from "@nats-io/kv";
import { PermissionViolationError, type Status } from "@nats-io/nats-core";
import type { z } from "zod";
import {
  BucketValue,
  ErrorCode,
  MeshError,
  isMeshError,
  type Bucket,
  type BucketValueOf,
} from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { abortable, toMeshError, withContext } from "./bus-errors.js";

export interface CallOptions {
  readonly signal?: AbortSignal;
}

/** A value read from a bucket, with the revision a later `update` must name. */
export interface Entry<T> {
  readonly key: string;
  readonly value: T;
  readonly revision: number;
  /** When the server stored it. */
  readonly created: Date;
}

/** What a watch hands, in order: the standing values, one `current` marker, then each change. */
export type WatchEvent<T> =
  | {
      readonly type: "put";
      readonly key: string;
      readonly value: T;
      readonly revision: number;
      readonly created: Date;
    }
  | {
      readonly type: "delete";
      readonly key: string;
      readonly revision: number;
      readonly created: Date;
    }
  /** A value that does not match the bucket's schema: reported, never thrown, so one bad writer cannot stop a watcher. */
  | {
      readonly type: "invalid";
      readonly key: string;
      readonly revision: number;
      readonly problem: MeshError;
    }
  /** Everything that stood when the watch began has been handed. Sent once. */
  | { readonly type: "current" };

export interface WatchOptions extends CallOptions {
  /** A key or a pattern with `*` / `>`; every key when omitted. */
  readonly key?: string;
  /** `last` (default): each key's latest value; `history`: every kept revision; `updates`: only what changes from now. */
  readonly include?: "last" | "history" | "updates";
}

export class KvBucket<T> {
  readonly name: string;
  readonly #kv: KV;
  readonly #schema: z.ZodType<T>;
  /** The connection, for what the client reports only there (see watch). */
  readonly #bus: MeshBus | undefined;

  constructor(name: string, kv: KV, schema: z.ZodType<T>, bus?: MeshBus) {
    this.name = name;
    this.#kv = kv;
    this.#schema = schema;
    this.#bus = bus;
  }

  /** Opens a bucket of the layout with its schema. Opening does not talk to the server. */
  static async open<B extends Bucket>(
    bus: MeshBus,
    bucket: B,
  ): Promise<KvBucket<BucketValueOf<B>>> {
    return KvBucket.openWith(
      bus,
      bucket,
      BucketValue[bucket] as unknown as z.ZodType<BucketValueOf<B>>,
    );
  }

  /** Opens any bucket (a module's state, say) with a schema of the caller's. */
  static async openWith<T>(
    bus: MeshBus,
    bucket: string,
    schema: z.ZodType<T>,
  ): Promise<KvBucket<T>> {
    // Direct gets (`$JS.API.DIRECT.GET.<stream>.<subject>`) carry the key in the subject, so a
    // credential can be granted a single key; every bucket the mesh creates allows them.
    const kv = await bus.kvm.open(bucket, { allow_direct: true });
    return new KvBucket(bucket, kv, schema, bus);
  }

  /** Checks that the bucket exists and this credential may see it; use at start to fail early. */
  async check(options: CallOptions = {}): Promise<void> {
    await withContext({ doing: `opening the bucket ${this.name}` }, () =>
      abortable(this.#kv.status(), options.signal, `opening the bucket ${this.name}`),
    );
  }

  /** The key's current value, or undefined when it has none (never written, deleted or purged). */
  async get(key: string, options: CallOptions = {}): Promise<Entry<T> | undefined> {
    const doing = `reading ${this.name} key ${key}`;
    const entry = await withContext({ doing, key }, () =>
      abortable(this.#kv.get(key), options.signal, doing),
    );
    if (entry === null || entry.operation !== "PUT") return undefined;
    return {
      key,
      value: this.#decode(entry, doing),
      revision: entry.revision,
      created: entry.created,
    };
  }

  /** Writes the key's value and returns its revision. */
  async put(key: string, value: T, options: CallOptions = {}): Promise<number> {
    const doing = `writing ${this.name} key ${key}`;
    const data = this.#encode(value, doing, key);
    return withContext({ doing, key }, () =>
      abortable(this.#kv.put(key, data), options.signal, doing),
    );
  }

  /** Writes the key only when it has no value; CONFLICT otherwise. */
  async create(key: string, value: T, options: CallOptions = {}): Promise<number> {
    const doing = `creating ${this.name} key ${key}`;
    const data = this.#encode(value, doing, key);
    return withContext({ doing, key }, () =>
      abortable(this.#kv.create(key, data), options.signal, doing),
    );
  }

  /** Writes the key only when its revision is still `revision`; CONFLICT otherwise. */
  async update(
    key: string,
    value: T,
    revision: number,
    options: CallOptions = {},
  ): Promise<number> {
    const doing = `updating ${this.name} key ${key} at revision ${revision}`;
    const data = this.#encode(value, doing, key);
    return withContext({ doing, key }, () =>
      abortable(this.#kv.update(key, data, revision), options.signal, doing),
    );
  }

  /** Deletes the key's value (its history stays until purged). */
  async delete(key: string, options: CallOptions = {}): Promise<void> {
    const doing = `deleting ${this.name} key ${key}`;
    await withContext({ doing, key }, () => abortable(this.#kv.delete(key), options.signal, doing));
  }

  /** Every key with a value, optionally under a pattern. */
  async keys(filter = ">", options: CallOptions = {}): Promise<string[]> {
    const doing = `listing ${this.name} keys ${filter}`;
    return withContext({ doing }, () =>
      abortable(
        (async () => {
          const out: string[] = [];
          for await (const key of await this.#kv.keys(filter)) out.push(key);
          return out.sort();
        })(),
        options.signal,
        doing,
      ),
    );
  }

  /** Every kept revision of one key, oldest first; deletes appear as undefined values. */
  async history(
    key: string,
    options: CallOptions = {},
  ): Promise<Array<{ revision: number; value: T | undefined }>> {
    const doing = `reading the history of ${this.name} key ${key}`;
    return withContext({ doing, key }, () =>
      abortable(
        (async () => {
          const out: Array<{ revision: number; value: T | undefined }> = [];
          for await (const entry of await this.#kv.history({ key })) {
            out.push({
              revision: entry.revision,
              value: entry.operation === "PUT" ? this.#decode(entry, doing) : undefined,
            });
          }
          return out;
        })(),
        options.signal,
        doing,
      ),
    );
  }

  /**
   * Watches the bucket: hands what stands, then one `current` marker, then each change, until the
   * signal aborts or the iterator is left. The marker comes also for an empty bucket (at once).
   */
  async *watch(options: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    const { signal } = options;
    if (isAborted(signal)) return;
    const doing = `watching ${this.name}${options.key === undefined ? "" : ` key ${options.key}`}`;
    const include = options.include ?? "last";
    const start = () =>
      this.#kv.watch({
        ...(options.key === undefined ? {} : { key: options.key }),
        ...(include === "history" ? { include: "history" as never } : {}),
        ...(include === "updates" ? { include: "updates" as never } : {}),
      });
    let starting: ReturnType<typeof start> | undefined;
    let iter: Awaited<ReturnType<typeof start>>;
    try {
      // Each attempt (a retry follows a transient failure) starts the watch afresh.
      iter = await withContext({ doing }, () => {
        starting = start();
        return abortable(starting, signal, doing);
      });
    } catch (error) {
      if (!isMeshError(error, ErrorCode.ABORTED)) throw error;
      // Aborted while the watch was starting: an abort ends a watch, it is no failure. The
      // client goes on starting it (one round trip); the iteration ends once that is done and
      // the watcher stopped, so an ended watch holds nothing. (A connection closed under a
      // starting watcher makes the client leak its heartbeat timer, which keeps the process.)
      (await starting?.catch(() => undefined))?.stop();
      return;
    }
    let stopped = false;
    const stop = () => {
      stopped = true;
      iter.stop();
    };
    signal?.addEventListener("abort", stop, { once: true });
    const unregister = this.#bus?.beforeClose(stop);
    // The signal may have fired between the start and now.
    if (isAborted(signal)) stop();
    // The client ends its watcher quietly when the server drops the watcher's subscription (a
    // reload that narrowed this credential's grant): the refusal is seen only on the
    // connection's status, so it is listened for while the watch runs.
    const statuses = this.#bus?.nc.status() as
      (AsyncIterable<Status> & { stop(): void }) | undefined;
    let refusal: PermissionViolationError | undefined;
    let deliverPrefix: string | undefined;
    const listening = (async () => {
      for await (const status of statuses ?? []) {
        if (
          status.type === "error" &&
          status.error instanceof PermissionViolationError &&
          deliverPrefix !== undefined &&
          status.error.subject.startsWith(deliverPrefix)
        ) {
          refusal = status.error;
        }
      }
    })();
    try {
      const consumer = await watcherConsumer(iter, doing);
      // An ordered consumer delivers to `<prefix>.<serial>`, the serial moving on each reset.
      deliverPrefix = consumer.config.deliver_subject.replace(/[^.]*$/, "");
      // The client counts the consumer's pending messages when it creates the watch and flags
      // every entry after that count as an update; it offers no marker, and for an empty bucket
      // nothing arrives at all. So the count is read from the consumer the client keeps.
      let standing = include === "updates" ? 0 : consumer.num_pending;
      if (standing === 0) yield { type: "current" };
      for await (const entry of iter) {
        yield this.#toEvent(entry, doing);
        if (standing > 0) {
          standing -= 1;
          if (standing === 0) yield { type: "current" };
        }
      }
      // The client ended the watch: not an end the caller asked for, unless it closed the bus.
      if (!stopped && this.#bus?.isClosed !== true) {
        // The refusal was queued on the status iterator before the watcher ended; a stopped
        // iterator still hands what it holds, so the listener has seen it once it is done.
        statuses?.stop();
        await listening;
        if (refusal !== undefined) throw toMeshError(refusal, { doing });
        throw new MeshError(
          ErrorCode.INTERNAL,
          `${doing}: the NATS client ended the watch on its own; start the watch again`,
        );
      }
    } finally {
      signal?.removeEventListener("abort", stop);
      unregister?.();
      iter.stop();
      statuses?.stop();
    }
  }

  #toEvent(entry: KvWatchEntry, doing: string): WatchEvent<T> {
    const base = { key: entry.key, revision: entry.revision, created: entry.created };
    if (entry.operation !== "PUT") return { type: "delete", ...base };
    try {
      return { type: "put", ...base, value: this.#decode(entry, doing) };
    } catch (error) {
      return {
        type: "invalid",
        key: entry.key,
        revision: entry.revision,
        problem: error as MeshError,
      };
    }
  }

  #decode(entry: KvEntry, doing: string): T {
    let json: unknown;
    try {
      json = entry.json();
    } catch (error) {
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `${doing}: the value is not JSON; whoever wrote it is broken — rewrite it`,
        {
          key: entry.key,
          cause: error,
        },
      );
    }
    const parsed = this.#schema.safeParse(json);
    if (!parsed.success) {
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `${doing}: the value does not match the ${this.name} schema (${summarise(parsed.error)}); whoever wrote it is broken — rewrite it`,
        { key: entry.key, cause: parsed.error },
      );
    }
    return parsed.data;
  }

  #encode(value: T, doing: string, key: string): string {
    const parsed = this.#schema.safeParse(value);
    if (!parsed.success) {
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `${doing}: the value does not match the ${this.name} schema (${summarise(parsed.error)}); fix the value before writing it`,
        { key, cause: parsed.error },
      );
    }
    return JSON.stringify(parsed.data);
  }
}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function summarise(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join(".") || "(value)"}: ${i.message}`)
    .join("; ");
}

/** The watch's consumer as the client created it: what was pending then, where it delivers. */
async function watcherConsumer(
  iter: object,
  doing: string,
): Promise<{ num_pending: number; config: { deliver_subject: string } }> {
  const consumer = (
    iter as {
      _data?: {
        info?: (
          cached: boolean,
        ) => Promise<{ num_pending: number; config: { deliver_subject: string } }>;
      };
    }
  )._data;
  if (consumer?.info === undefined) {
    throw new MeshError(
      ErrorCode.INTERNAL,
      `${doing}: the NATS client no longer exposes its watch consumer, so the end of the standing values cannot be told; pin @nats-io/kv to the version in package.json`,
    );
  }
  return consumer.info(true);
}
