/**
 * A key-value bucket whose values are JSON checked against a schema. Reads parse before they are
 * trusted; writes check before they leave. Every call takes an AbortSignal.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { KV, KvEntry, KvWatchEntry } from "@nats-io/kv";
import { PermissionViolationError, type Status } from "@nats-io/nats-core";
import type { z } from "zod";
import {
  BucketValue,
  ErrorCode,
  MeshError,
  isMeshError,
  kvStreamName,
  type Bucket,
  type BucketValueOf,
} from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import {
  READ_RETRIES,
  abortable,
  isUnansweredRead,
  toMeshError,
  withContext,
} from "./bus-errors.js";
import { heldUntilCurrent, leaderNewest } from "./current-copy.js";
import { openRawWatch, type RawWatch } from "./kv-watch.js";
import { natsOf } from "./mesh-bus.js";

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

/**
 * `fromLeader`: what is read is what the cluster acknowledged (decision 0210): a get asks the
 * stream's leader, and a watch hands what stands only once it reached what the leader holds.
 * Without it any copy answers, one still catching up after a partition or a restart included.
 * Needs `$JS.API.STREAM.MSG.GET.<stream>` (the key in the body: for whole-bucket readers only).
 */
export interface OpenOptions {
  readonly fromLeader?: boolean;
}

export class KvBucket<T> {
  readonly name: string;
  readonly #kv: KV;
  readonly #schema: z.ZodType<T>;
  /** The connection, for what the client reports only there (see watch). */
  readonly #bus: MeshBus | undefined;
  readonly #fromLeader: boolean;

  constructor(name: string, kv: KV, schema: z.ZodType<T>, bus?: MeshBus, fromLeader = false) {
    this.name = name;
    this.#kv = kv;
    this.#schema = schema;
    this.#bus = bus;
    this.#fromLeader = fromLeader && bus !== undefined;
  }

  /** Opens a bucket of the layout with its schema. Opening does not talk to the server. */
  static async open<B extends Bucket>(
    bus: MeshBus,
    bucket: B,
    options: OpenOptions = {},
  ): Promise<KvBucket<BucketValueOf<B>>> {
    return KvBucket.openWith(
      bus,
      bucket,
      BucketValue[bucket] as unknown as z.ZodType<BucketValueOf<B>>,
      options,
    );
  }

  /** Opens any bucket (a module's state, say) with a schema of the caller's. */
  static async openWith<T>(
    bus: MeshBus,
    bucket: string,
    schema: z.ZodType<T>,
    options: OpenOptions = {},
  ): Promise<KvBucket<T>> {
    // Direct gets (`$JS.API.DIRECT.GET.<stream>.<subject>`) carry the key in the subject, so a
    // credential can be granted a single key; every bucket the mesh creates allows them. Any copy
    // answers one, also one still catching up; `fromLeader` reads from the stream's leader only
    // (what it answers is what the cluster acknowledged), for a credential with MSG.GET.
    const fromLeader = options.fromLeader === true;
    const kv = await natsOf(bus).kvm.open(bucket, { allow_direct: !fromLeader });
    return new KvBucket(bucket, kv, schema, bus, fromLeader);
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
    // Any copy answers a direct get, through a queue group: one on a server cut off is asked too
    // until the routes to it close (isUnansweredRead).
    const entry = await withContext(
      { doing, key },
      () => abortable(this.#kv.get(key), options.signal, doing),
      READ_RETRIES,
      isUnansweredRead,
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
    return withContext(
      { doing },
      () =>
        abortable(
          (async () => {
            const out: string[] = [];
            for await (const key of await this.#kv.keys(filter)) out.push(key);
            return out.sort();
          })(),
          options.signal,
          doing,
        ),
      READ_RETRIES,
      isUnansweredRead,
    );
  }

  /**
   * Every key the bucket's stream holds a message under, sorted — a deleted key's marker too —
   * from one stream info request per 100,000 keys (`subjects_filter`): far cheaper than `keys()`,
   * which receives one message per key. A caller that must not see deleted keys checks the count
   * against what it knows, and lists with `keys()` when they differ. Needs `STREAM.INFO`.
   */
  async keysHeld(options: CallOptions = {}): Promise<string[]> {
    const doing = `listing the subjects of ${this.name}`;
    const prefix = `$KV.${this.name}.`;
    if (this.#bus === undefined) throw new MeshError(ErrorCode.INTERNAL, `${doing}: no connection`);
    const nc = natsOf(this.#bus).nc;
    return withContext({ doing }, () =>
      abortable(
        (async () => {
          const jsm = await jetstreamManager(nc, { checkAPI: false });
          const info = await jsm.streams.info(kvStreamName(this.name), {
            subjects_filter: `${prefix}>`,
          });
          return Object.keys(info.state.subjects ?? {})
            .map((subject) => subject.slice(prefix.length))
            .sort();
        })(),
        options.signal,
        doing,
      ),
    );
  }

  /**
   * Every kept revision of one key (or of the keys a pattern such as `*.<module>` matches), oldest
   * first, with the key and when it was written; deletes appear as undefined values.
   */
  async history(
    key: string,
    options: CallOptions = {},
  ): Promise<Array<{ revision: number; value: T | undefined; key: string; at: Date }>> {
    const doing = `reading the history of ${this.name} key ${key}`;
    return withContext(
      { doing, key },
      () =>
        abortable(
          (async () => {
            const out: Array<{ revision: number; value: T | undefined; key: string; at: Date }> =
              [];
            for await (const entry of await this.#kv.history({ key })) {
              out.push({
                key: entry.key,
                at: entry.created,
                revision: entry.revision,
                value: entry.operation === "PUT" ? this.#decode(entry, doing) : undefined,
              });
            }
            return out;
          })(),
          options.signal,
          doing,
        ),
      READ_RETRIES,
      isUnansweredRead,
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
    let starting: Promise<RawWatch> | undefined;
    let watch: RawWatch;
    try {
      watch = await withContext({ doing }, () => {
        starting = this.#openWatch(options.key ?? ">", include, doing, signal);
        return abortable(starting, signal, doing);
      });
    } catch (error) {
      if (!isMeshError(error, ErrorCode.ABORTED)) throw error;
      // Aborted while the watch was starting: an abort ends a watch, it is no failure. The
      // client goes on starting it (one round trip); the iteration ends once that is done and
      // the watcher stopped, so an ended watch holds nothing.
      (await starting?.catch(() => undefined))?.stop();
      return;
    }
    let stopped = false;
    const stop = () => {
      stopped = true;
      watch.stop();
    };
    signal?.addEventListener("abort", stop, { once: true });
    const unregister = this.#bus?.beforeClose(stop);
    // The signal may have fired between the start and now.
    if (isAborted(signal)) stop();
    // The server drops the watcher's subscription when a reload narrowed this credential's
    // grant: the refusal is seen only on the connection's status, so it is listened for.
    const statuses = (this.#bus === undefined ? undefined : natsOf(this.#bus).nc.status()) as
      (AsyncIterable<Status> & { stop(): void }) | undefined;
    let refusal: PermissionViolationError | undefined;
    const listening = (async () => {
      for await (const status of statuses ?? []) {
        if (
          status.type === "error" &&
          status.error instanceof PermissionViolationError &&
          status.error.subject.startsWith(watch.deliverPrefix)
        ) {
          refusal = status.error;
          watch.stop();
        }
      }
    })();
    try {
      // The consumer's pending count when it was made tells where the standing values end; for
      // an empty bucket nothing arrives at all, so the marker comes at once.
      let standing = watch.pending;
      if (standing === 0) yield { type: "current" };
      for (let entry = await watch.next(); entry !== undefined; entry = await watch.next()) {
        yield this.#toEvent(entry, doing);
        if (standing > 0) {
          standing -= 1;
          if (standing === 0) yield { type: "current" };
        }
      }
      // The watch ended on its own: not an end the caller asked for, unless it closed the bus.
      if (!stopped && this.#bus?.isClosed !== true) {
        // A refusal is queued on the status iterator before the watcher ends; a stopped
        // iterator still hands what it holds, so the listener has seen it once it is done.
        statuses?.stop();
        await listening;
        if (refusal !== undefined) throw toMeshError(refusal, { doing });
        throw new MeshError(
          ErrorCode.WATCH_ENDED,
          `${doing}: the watch ended (${watch.ended ?? "for no reason the client gave"}); watch again to catch up with what was missed`,
        );
      }
    } finally {
      signal?.removeEventListener("abort", stop);
      unregister?.();
      watch.stop();
      statuses?.stop();
      await listening;
    }
  }

  /** The watch's consumer; read from the leader, its standing entries wait for the leader's newest. */
  async #openWatch(
    key: string,
    include: "last" | "history" | "updates",
    doing: string,
    signal: AbortSignal | undefined,
  ): Promise<RawWatch> {
    if (!this.#fromLeader || this.#bus === undefined || include === "updates")
      return openRawWatch(this.#kv, key, include);
    // Asked before the consumer is made: what the leader held then, the consumer must hand.
    const subject = `$KV.${this.name}.${key}`;
    const newest = await leaderNewest(this.#bus, kvStreamName(this.name), subject, signal).catch(
      (error: unknown) => {
        // A grant made before decision 0210 (a controller older than this host) has no leader
        // get for the bucket: such a credential watches as before rather than not at all.
        if (isMeshError(error, ErrorCode.PERMISSION_DENIED)) return undefined;
        throw error;
      },
    );
    const raw = await openRawWatch(this.#kv, key, include);
    return newest === undefined ? raw : heldUntilCurrent(raw, newest, doing);
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
