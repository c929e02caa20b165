/**
 * What a test hears of everything published on its bus, as the admin subscribed to `>`: every
 * write to a bucket (`$KV.…`) or a mesh subject (`mesh.…`: conditions, keeps, logs), and every
 * JetStream API request, so a test counts an assigner's writes and its tries to open a bucket
 * without trusting the assigner's own word.
 */
import type { MeshBus } from "@mesh/bus";
import { natsOf } from "@mesh/bus/internal";

export interface Heard {
  readonly at: number;
  readonly subject: string;
}

export interface BusTap {
  readonly heard: readonly Heard[];
  /** Writes heard from `since` on (Date.now), but those to the buckets named in `except`. */
  writes(since: number, except?: readonly string[]): Heard[];
  /** The requests that try to watch `bucket` (a consumer's creation), from `since` on. */
  tries(bucket: string, since?: number): Heard[];
  stop(): void;
}

export async function tapBus(admin: MeshBus): Promise<BusTap> {
  const { nc } = natsOf(admin);
  const sub = nc.subscribe(">");
  const heard: Heard[] = [];
  void (async () => {
    for await (const m of sub) {
      if (
        m.subject.startsWith("$KV.") ||
        m.subject.startsWith("mesh.") ||
        m.subject.startsWith("$JS.API.")
      )
        heard.push({ at: Date.now(), subject: m.subject });
    }
  })();
  await nc.flush();
  return {
    heard,
    writes: (since, except = []) =>
      heard.filter(
        (h) =>
          h.at >= since &&
          (h.subject.startsWith("$KV.") || h.subject.startsWith("mesh.")) &&
          !except.some((b) => h.subject.startsWith(`$KV.${b}.`)),
      ),
    tries: (bucket, since = 0) =>
      heard.filter(
        (h) => h.at >= since && h.subject.startsWith(`$JS.API.CONSUMER.CREATE.KV_${bucket}.`),
      ),
    stop: () => sub.unsubscribe(),
  };
}
