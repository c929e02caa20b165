/**
 * Reading a stream that is not a bucket (conditions, logs): what it holds under a filter, then
 * each new message, as an async iterator, the same shape as a bucket's watch.
 *
 * It reads through an ordered push consumer with one filter subject, the only form the operator's
 * grant allows (`streamRead` in @mesh/core: `$JS.API.CONSUMER.CREATE.<stream>.*.<filter>` and flow
 * control; deliveries come to the credential's own inbox). An ordered pull consumer would also
 * need `STREAM.INFO` and `CONSUMER.MSG.NEXT`, and a consumer without a filter asks for `>`, which
 * no reader is granted, so the filter is required here.
 */
import type { ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import { DeliverPolicy, jetstreamManager } from "@nats-io/jetstream";
import type { z } from "zod";
import { ErrorCode, MeshError } from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { abortable, toMeshError, withContext } from "./bus-errors.js";
import { natsOf } from "./mesh-bus.js";

export interface StreamReadOptions<T> {
  /** One subject filter (`mesh.conditions.>`); a reader is granted only filtered consumers. */
  readonly filter: string;
  /** Each message's body is parsed as JSON and checked against this before it is handed. */
  readonly schema: z.ZodType<T>;
  /**
   * `all` (default): every message the stream keeps under the filter, then new ones;
   * `last-per-subject`: the last kept message of each subject, then new ones; `new`: only what
   * arrives from now (the `current` marker comes at once).
   */
  readonly deliver?: "all" | "last-per-subject" | "new";
  /**
   * Begin at this stream sequence instead (what the stream keeps from there under the filter,
   * then new ones): how a reader pages through a long stream, never reading all of it.
   */
  readonly startSeq?: number;
  readonly signal?: AbortSignal;
}

/** What a stream read hands, in order: the kept messages, one `current` marker, then new ones. */
export type StreamEvent<T> =
  | {
      readonly type: "message";
      readonly subject: string;
      /** The stream sequence: increases with every message the stream stores. */
      readonly seq: number;
      /** When the stream stored it. */
      readonly time: Date;
      readonly value: T;
    }
  /** A message that is not JSON or not of the schema: reported, never thrown. */
  | {
      readonly type: "invalid";
      readonly subject: string;
      readonly seq: number;
      readonly problem: MeshError;
    }
  /** Everything the stream held under the filter when the read began has been handed. Sent once. */
  | { readonly type: "current" };

const DELIVER: Record<NonNullable<StreamReadOptions<unknown>["deliver"]>, DeliverPolicy> = {
  all: DeliverPolicy.All,
  "last-per-subject": DeliverPolicy.LastPerSubject,
  new: DeliverPolicy.New,
};

/**
 * Reads `stream` under `options.filter` until the signal aborts or the loop is left. The client
 * recreates the consumer where it left off when the connection comes back, so a reader neither
 * misses nor repeats a message across a reconnect.
 */
export async function* readStream<T>(
  bus: MeshBus,
  stream: string,
  options: StreamReadOptions<T>,
): AsyncGenerator<StreamEvent<T>> {
  const doing = `reading the stream ${stream} under ${options.filter}`;
  const deliver = options.deliver ?? "all";
  const start = options.startSeq;
  const consumer = await withContext({ doing }, () =>
    abortable(
      natsOf(bus).js.consumers.getPushConsumer(stream, {
        filter_subjects: options.filter,
        ...(start === undefined
          ? { deliver_policy: DELIVER[deliver] }
          : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, start) }),
      }),
      options.signal,
      doing,
    ),
  );
  // The consumer's info comes from its create reply: how many messages stood when it began.
  let standing =
    deliver === "new" && start === undefined ? 0 : (await consumer.info(true)).num_pending;
  let messages: ConsumerMessages;
  try {
    messages = await consumer.consume();
  } catch (error) {
    throw toMeshError(error, { doing });
  }
  const stop = (): void => void messages.close();
  options.signal?.addEventListener("abort", stop, { once: true });
  const unregister = bus.beforeClose(stop);
  // The client closes a consumer by queueing the close on the iterator's own queue: until
  // something iterates, the close never runs (and `close()` never resolves). A reader that leaves
  // before it iterated (nothing stood, the marker was all it wanted) drains it in `finally`.
  let iterating = false;
  try {
    if (options.signal?.aborted === true) return;
    if (standing === 0) yield { type: "current" };
    iterating = true;
    for await (const message of messages) {
      yield toEvent(message, options.schema, doing);
      if (standing > 0) {
        standing -= 1;
        // The server's count of what is left is the truth should the two ever disagree.
        if (standing === 0 || message.info.pending === 0) {
          standing = 0;
          yield { type: "current" };
        }
      }
    }
  } catch (error) {
    throw toMeshError(error, { doing });
  } finally {
    options.signal?.removeEventListener("abort", stop);
    unregister();
    const closed = messages.close();
    if (!iterating) for await (const _ of messages) void _; // runs the queued close
    await closed;
  }
}

function toEvent<T>(message: JsMsg, schema: z.ZodType<T>, doing: string): StreamEvent<T> {
  const base = { subject: message.subject, seq: message.seq };
  let json: unknown;
  try {
    json = message.json();
  } catch (error) {
    return {
      type: "invalid",
      ...base,
      problem: new MeshError(
        ErrorCode.INVALID_VALUE,
        `${doing}: message ${message.seq} on ${message.subject} is not JSON; its sender is broken`,
        { subject: message.subject, cause: error },
      ),
    };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    return {
      type: "invalid",
      ...base,
      problem: new MeshError(
        ErrorCode.INVALID_VALUE,
        `${doing}: message ${message.seq} on ${message.subject} does not match its schema (${parsed.error.issues
          .slice(0, 5)
          .map((i) => `${i.path.join(".") || "(value)"}: ${i.message}`)
          .join("; ")}); its sender is broken`,
        { subject: message.subject, cause: parsed.error },
      ),
    };
  }
  return { type: "message", ...base, time: message.time, value: parsed.data };
}

/** The first and last sequence a stream holds (`first > last` when it is empty). */
export async function streamBounds(
  bus: MeshBus,
  stream: string,
  options: { readonly signal?: AbortSignal } = {},
): Promise<{ readonly first: number; readonly last: number }> {
  const doing = `reading the bounds of the stream ${stream}`;
  return withContext({ doing }, () =>
    abortable(
      (async () => {
        const jsm = await jetstreamManager(natsOf(bus).nc, { checkAPI: false });
        const { state } = await jsm.streams.info(stream);
        return { first: state.first_seq, last: state.last_seq };
      })(),
      options.signal,
      doing,
    ),
  );
}
