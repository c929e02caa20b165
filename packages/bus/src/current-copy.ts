/**
 * Reads that must be answered by a current copy of a bucket (decision 0210). In a cluster every
 * copy of a stream answers a direct get, and a watch's consumer is placed on any copy the meta
 * leader picks, one still catching up after a partition or a restart included: such a read hands
 * what stood before writes the cluster acknowledged. The stream's leader answers `STREAM.MSG.GET`
 * alone, so it is asked once, before the watch's consumer is made, for the newest message under
 * the watch's filter; the standing values the consumer hands are held back until they reach it.
 * A copy that is behind ends the watch with WATCH_ENDED (nothing of it handed), and whoever
 * watches again gets a consumer placed anew — the reads stay spread over every copy.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { KvWatchEntry } from "@nats-io/kv";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { isUnansweredRead, READ_RETRIES, withContext, abortable } from "./bus-errors.js";
import type { RawWatch } from "./kv-watch.js";
import { natsOf, type MeshBus } from "./mesh-bus.js";

/**
 * The stream sequence of the newest message the stream's leader holds under `subject` (a
 * pattern too), 0 when it holds none. Needs `$JS.API.STREAM.MSG.GET.<stream>`.
 */
export async function leaderNewest(
  bus: MeshBus,
  stream: string,
  subject: string,
  signal?: AbortSignal,
): Promise<number> {
  const doing = `asking the leader of ${stream} for its newest message under ${subject}`;
  return withContext(
    { doing },
    () =>
      abortable(
        (async () => {
          const jsm = await jetstreamManager(natsOf(bus).nc, { checkAPI: false });
          const newest = await jsm.streams.getMessage(stream, { last_by_subj: subject });
          return newest?.seq ?? 0;
        })(),
        signal,
        doing,
      ),
    READ_RETRIES,
    isUnansweredRead,
  );
}

/**
 * The raw watch with its standing entries held back until they reach `newest` (the leader's, asked
 * before the consumer was made): `next()` hands them once they do, and throws WATCH_ENDED when
 * the copy that answered is behind. What comes after the standing entries passes through.
 */
export function heldUntilCurrent(raw: RawWatch, newest: number, doing: string): RawWatch {
  let held: Array<KvWatchEntry | undefined> | undefined;
  const fill = async (): Promise<Array<KvWatchEntry | undefined>> => {
    const entries: Array<KvWatchEntry | undefined> = [];
    let reached = 0;
    for (let left = raw.pending; left > 0; left--) {
      const entry = await raw.next();
      entries.push(entry);
      // The watch ended on its own: its end is handed after what came, as without the check.
      if (entry === undefined) return entries;
      reached = Math.max(reached, entry.revision);
    }
    if (reached < newest) {
      raw.stop();
      throw new MeshError(
        ErrorCode.WATCH_ENDED,
        `${doing}: the copy of the bucket that answered is behind its stream's leader (it holds up ` +
          `to revision ${reached}, the leader ${newest}): a server still catching up after a ` +
          `partition or a restart; watch again, a new consumer is placed anew`,
      );
    }
    return entries;
  };
  return {
    pending: raw.pending,
    deliverPrefix: raw.deliverPrefix,
    get ended() {
      return raw.ended;
    },
    next: async () => {
      held ??= await fill();
      return held.length > 0 ? held.shift() : raw.next();
    },
    stop: () => raw.stop(),
  };
}
