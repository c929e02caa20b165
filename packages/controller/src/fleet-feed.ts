/**
 * The controller's fleet feed: the buckets a composition pass reads (wants, presence, manifests,
 * secrets) kept by a bucket mirror, and what every process keeps (a stream), each change fed into
 * the Fleet index, which names the nodes it moves. A watch that ends is watched again by the
 * mirror, which applies what was missed meanwhile (a key deleted too); the keeps stream is read
 * again from what stands.
 */
import { z } from "zod";
import {
  Backoff,
  KvBucket,
  Mirror,
  readStream,
  type MeshBus,
  type MirrorChange,
  type MirrorSource,
} from "@mesh/bus";
import {
  Bucket,
  Keeps,
  Stream,
  Subject,
  keepsSubject,
  type Presence,
  type SealedSecret,
  type Want,
} from "@mesh/protocol";
import type { Fleet } from "./fleet.js";
import { intakeManifest } from "./manifest-intake.js";

export interface FleetFeedOptions {
  readonly bus: MeshBus;
  readonly fleet: Fleet;
  /** The secrets bucket, and the map its sealed values are kept in. */
  readonly secrets: KvBucket<SealedSecret>;
  readonly secretValues: Map<string, SealedSecret>;
  /** Told after every change: a pass is due. */
  readonly poke: () => void;
  readonly log: (line: string) => void;
  readonly signal: AbortSignal;
}

export interface FleetFeed extends AsyncDisposable {
  /** Settles once every bucket and the keeps handed what stands. */
  readonly ready: Promise<void>;
  /** Rejects once a bucket is lost for good (not heard again within a minute). */
  readonly failed: Promise<never>;
}

type Sources = Record<string, MirrorSource<unknown, unknown>>;

export async function startFleetFeed(o: FleetFeedOptions): Promise<FleetFeed> {
  const sources: Sources = {
    [Bucket.wants]: { bucket: await KvBucket.open(o.bus, Bucket.wants) },
    [Bucket.presence]: { bucket: await KvBucket.open(o.bus, Bucket.presence) },
    [Bucket.manifests]: {
      bucket: await KvBucket.openWith(o.bus, Bucket.manifests, z.unknown()),
    },
    [Bucket.secrets]: {
      bucket: o.secrets,
      into: o.secretValues,
    },
  };
  const mirror = Mirror.start({
    sources,
    touched: (change) => {
      try {
        apply(o.fleet, change);
      } catch (error) {
        // One bad key (a name the layout refuses) is said and skipped, never fatal.
        o.log(`controller: ignored ${change.key}: ${(error as Error).message}`);
      }
      o.poke();
      // The Fleet names the nodes a change moves; the mirror need not.
      return [];
    },
    log: (line) => o.log(`controller: ${line}`),
  });
  const stop = new AbortController();
  const signal = AbortSignal.any([o.signal, stop.signal]);
  let keepsHanded!: () => void;
  const keepsReady = new Promise<void>((r) => (keepsHanded = r));
  const keeps = followKeeps(o, signal, keepsHanded);
  const ready = Promise.all([mirror.ready, keepsReady]).then(() => undefined);
  ready.catch(() => undefined);
  return {
    ready,
    failed: mirror.failed,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await mirror[Symbol.asyncDispose]();
      await keeps;
    },
  };
}

function apply(fleet: Fleet, change: MirrorChange): void {
  const { key, after } = change;
  switch (change.source) {
    case Bucket.wants:
      fleet.setWant(key, after as Want | undefined);
      break;
    case Bucket.presence:
      fleet.setPresence(key, after as Presence | undefined);
      break;
    case Bucket.manifests:
      fleet.setManifest(key, after === undefined ? undefined : intakeManifest(after));
      break;
    case Bucket.secrets:
      fleet.setSecret(key, after !== undefined);
      break;
  }
}

/** Reads what every process keeps, again from what stands after a failure (a lost bus). */
async function followKeeps(
  o: FleetFeedOptions,
  signal: AbortSignal,
  handed: () => void,
): Promise<void> {
  const backoff = new Backoff({ initialMs: 250, maxMs: 30_000, healthyMs: 30_000 });
  while (!signal.aborted) {
    try {
      backoff.started();
      for await (const event of readStream(o.bus, Stream.keeps, {
        filter: `${Subject.keepsPrefix}.>`,
        schema: Keeps,
        deliver: "last-per-subject",
        signal,
      })) {
        if (event.type === "current") handed();
        else if (event.type === "message") {
          // Only a process's own word counts: the subject is what its grant let it publish.
          if (event.subject === keepsSubject(event.value.node, event.value.module)) {
            o.fleet.setKeeps(event.value);
          } else o.log(`controller: ignored keeps on ${event.subject} naming another process`);
        } else o.log(`controller: ${event.problem.message}`);
        o.poke();
      }
      return;
    } catch (error) {
      if (signal.aborted) return;
      const wait = backoff.next();
      o.log(`controller: reading keeps failed (${(error as Error).message}); again in ${wait} ms`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
