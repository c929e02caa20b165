/**
 * The consumer under a bucket watch, opened as the KV client's own `watch()` opens it (an ordered
 * push consumer with a 3 s idle heartbeat), but kept in hand so the watch can tell when it ended:
 * the consumer deleted (its bucket deleted), the stream gone, or nothing — not even a heartbeat —
 * for {@link WATCH_STALL_MS}. The client alone notices none of these within a minute: it resets
 * after two missed heartbeats with a 30 s heartbeat from then on, and a bucket deleted and created
 * again is resumed from the old sequence, so everything written to the new one is skipped.
 *
 * The KV client asks for a 5 s heartbeat (`_buildCC`), but its ordered push consumer overwrites
 * it with 30 s (`getOrderedPushConsumer` in @nats-io/jetstream 3.4), so this file makes the
 * consumer itself, with a 3 s heartbeat, and consumes it through the client's public
 * `consumers.getBoundPushConsumer` (which asks the server nothing: a watcher's grant may create
 * consumers on its bucket but not ask for their info). That consumer is not "ordered" in the client's
 * sense, so the order check is here: a delivery past the next one ends the watch (the watcher
 * watches again from what the bucket holds), and one delivered again is handed on once.
 *
 * Only the package's exports are used: a module's runtime is bundled, and a bundle has no
 * `node_modules` to reach a file of the client by path.
 */
import type { KV, KvWatchEntry } from "@nats-io/kv";
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerInfo,
  type ConsumerNotification,
  type JetStreamClient,
  type JsMsg,
  type PushConsumer,
} from "@nats-io/jetstream";
import { createInbox, nanos, nuid } from "@nats-io/nats-core";
import { delay } from "@mesh/kit";

/** How often the server says an idle watch is alive. */
const HEARTBEAT_MS = 3_000;
/** Silence after which a watch counts as stalled: more than two heartbeats missed. */
export const WATCH_STALL_MS = 8_000;
/** The shortest wait between two looks at the silence, and the turn the socket gets after a late one. */
const CHECK_EVERY_MS = 250;

/** What the KV client's bucket offers beside its `KV` interface (public in @nats-io/kv 3.x). */
interface KvInternals {
  readonly js: JetStreamClient;
  readonly stream: string;
  _buildCC(key: string, content: string, opts?: Partial<ConsumerConfig>): Partial<ConsumerConfig>;
  jmToWatchEntry(jm: JsMsg, isUpdate: boolean): KvWatchEntry;
}

/** The consumer API under the client's `consumers` (public in @nats-io/jetstream 3.x). */
interface ConsumerApi {
  add(stream: string, config: Partial<ConsumerConfig>): Promise<ConsumerInfo>;
  getOptions(): { watcherPrefix?: string };
}

/** An ephemeral push consumer as the client's ordered one, but with the heartbeat asked for. */
async function pushConsumer(
  bucket: KvInternals,
  config: Partial<ConsumerConfig>,
): Promise<{ consumer: PushConsumer; info: ConsumerInfo }> {
  const api = (bucket.js.consumers as unknown as { api: ConsumerApi }).api;
  const name = `oc_${nuid.next()}_1`;
  const deliverSubject = `${createInbox(api.getOptions().watcherPrefix)}.1`;
  const info = await api.add(bucket.stream, {
    ...config,
    ack_policy: AckPolicy.None,
    inactive_threshold: nanos(5 * 60 * 1000),
    num_replicas: 1,
    max_deliver: 1,
    flow_control: true,
    idle_heartbeat: nanos(HEARTBEAT_MS),
    name,
    deliver_subject: deliverSubject,
  });
  const consumer = await bucket.js.consumers.getBoundPushConsumer({
    deliver_subject: deliverSubject,
    idle_heartbeat: nanos(HEARTBEAT_MS),
  });
  return { consumer, info };
}

export interface RawWatch {
  /** The entries, then `undefined` once the watch ended (for whatever reason). */
  next(): Promise<KvWatchEntry | undefined>;
  /** How many entries stood when the consumer was made (0 for `updates`). */
  readonly pending: number;
  /** Where the consumer delivers, without its serial. */
  readonly deliverPrefix: string;
  /** Why the watch ended on its own (undefined while it runs or when stopped by the caller). */
  readonly ended: string | undefined;
  stop(): void;
}

/** Opens the watch's consumer; `include` as the client's KvWatchInclude values. */
export async function openRawWatch(
  kv: KV,
  key: string,
  include: "last" | "history" | "updates",
): Promise<RawWatch> {
  const bucket = kv as unknown as KvInternals;
  const content = include === "history" ? "history" : include === "updates" ? "updates" : "";
  const { consumer, info } = await pushConsumer(
    bucket,
    bucket._buildCC(key, content, { headers_only: false }),
  );
  const queue = new Handoff<KvWatchEntry | undefined>();
  let ended: string | undefined;
  let done = false;
  /** Aborted once the watch ended: the silence check stops. */
  const listening = new AbortController();
  let last = Date.now();
  let delivered = 0;
  let streamSeq = 0;
  const push = (item: KvWatchEntry | undefined): void => queue.push(item);
  const messages = await consumer.consume({
    callback: (m) => {
      last = Date.now();
      const { deliverySequence, streamSequence } = m.info;
      // A delivery past the next one means the server skipped some: the watch cannot go on.
      if (deliverySequence > delivered + 1) {
        finish(`a change was missed (delivery ${deliverySequence}, ${delivered + 1} expected)`);
        return;
      }
      // One at or before the last (a server restarted from state it had not yet written) comes
      // again: what was already handed on is not handed on twice.
      delivered = deliverySequence;
      if (streamSequence <= streamSeq) return;
      streamSeq = streamSequence;
      push(bucket.jmToWatchEntry(m, false));
    },
  });
  const finish = (reason: string | undefined): void => {
    if (done) return;
    done = true;
    ended ??= reason;
    listening.abort();
    messages.stop();
    push(undefined);
  };
  void onSilence(() => last, finish, listening.signal);
  void (async () => {
    for await (const notice of messages.status()) {
      last = Date.now();
      const reason = endReason(notice);
      if (reason !== undefined) finish(reason);
    }
  })().catch(() => undefined);
  void messages.closed().then(
    () => finish("the NATS client ended the watch on its own"),
    (error: unknown) => finish(`the NATS client ended the watch (${String(error)})`),
  );
  return {
    pending: include === "updates" ? 0 : info.num_pending,
    deliverPrefix: (info.config.deliver_subject ?? "").replace(/[^.]*$/, ""),
    get ended() {
      return ended;
    },
    next: () => queue.next(),
    stop: () => finish(undefined),
  };
}

/** Items handed from the client's callback to one reader that awaits them in order. */
class Handoff<T> {
  readonly #queue: T[] = [];
  #wake: (() => void) | undefined;

  push(item: T): void {
    this.#queue.push(item);
    this.#wake?.();
  }

  async next(): Promise<T | undefined> {
    while (this.#queue.length === 0) await new Promise<void>((r) => (this.#wake = r));
    this.#wake = undefined;
    return this.#queue.shift();
  }
}

/**
 * Ends the watch once the server has been silent for over WATCH_STALL_MS. It wakes when the
 * silence could first reach that (the last word heard plus WATCH_STALL_MS), not on a fixed tick:
 * a tick every 250 ms was 32 timers per watch per stall period, and a process with 30,000 watches
 * (the fleet bench's 10,000 simulated hosts) spent most of a core on them (decision 0216). Its
 * waits do not keep the process alive, and end when `signal` aborts (the watch ended).
 */
async function onSilence(
  heardAt: () => number,
  end: (reason: string) => void,
  signal: AbortSignal,
): Promise<void> {
  let wait = WATCH_STALL_MS;
  for (;;) {
    const asked = Date.now();
    if (!(await delay(wait, { signal, ref: false }))) return;
    const now = Date.now();
    // A late wake means this process was stalled, not the server: timers run before the
    // socket's data is read, so the socket gets a turn before silence is judged.
    if (now - asked > wait + CHECK_EVERY_MS * 4) {
      wait = CHECK_EVERY_MS;
      continue;
    }
    const silent = now - heardAt();
    if (silent > WATCH_STALL_MS) {
      end(`the server sent nothing, not even a heartbeat, for ${(silent / 1000).toFixed(1)} s`);
      return;
    }
    // Next when this silence would pass the limit, if nothing is heard meanwhile.
    wait = Math.max(CHECK_EVERY_MS, WATCH_STALL_MS - silent + 1);
  }
}

/** The notices that mean the watch hears nothing any more. */
function endReason(notice: ConsumerNotification): string | undefined {
  switch (notice.type) {
    case "consumer_deleted":
      return `the server deleted the watch's consumer (${notice.description}; the bucket was deleted?)`;
    case "stream_not_found":
      return "the bucket's stream is gone (the bucket was deleted)";
    case "heartbeats_missed":
      return `the server sent nothing, not even a heartbeat, for ${notice.count} heartbeats of ${HEARTBEAT_MS / 1000} s`;
    default:
      return undefined;
  }
}
