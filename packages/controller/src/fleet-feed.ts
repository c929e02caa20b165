/**
 * The controller's fleet feed: the buckets a composition pass reads (wants, presence, manifests,
 * secrets) kept by a bucket mirror, and what every process keeps (a stream), each change fed into
 * the Fleet index, which names the nodes it moves. A watch that ends is watched again by the
 * mirror, which applies what was missed meanwhile (a key deleted too); the keeps stream is one
 * of its sources, read again from what stands.
 */
import { z } from "zod";
import {
  KvBucket,
  Mirror,
  streamSource,
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
}

export interface FleetFeed extends AsyncDisposable {
  /** Settles once every bucket and the keeps handed what stands. */
  readonly ready: Promise<void>;
  /** Rejects once a source is lost for good (not heard again within a minute). */
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
    [Stream.keeps]: {
      bucket: streamSource(o.bus, {
        stream: Stream.keeps,
        prefix: Subject.keepsPrefix,
        schema: Keeps,
        deliver: "last-per-subject",
      }),
    },
  };
  const mirror = Mirror.start({
    sources,
    touched: (change) => {
      try {
        apply(o, change);
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
  return {
    ready: mirror.ready,
    failed: mirror.failed,
    [Symbol.asyncDispose]: () => mirror[Symbol.asyncDispose](),
  };
}

function apply({ fleet, log }: FleetFeedOptions, change: MirrorChange): void {
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
    case Stream.keeps: {
      // A process's word stays until it says another (a report that breaks the schema is none).
      if (after === undefined) break;
      const keeps = after as Keeps;
      // Only a process's own word counts: the subject is what its grant let it publish.
      if (`${Subject.keepsPrefix}.${key}` === keepsSubject(keeps.node, keeps.module))
        fleet.setKeeps(keeps);
      else log(`controller: ignored keeps on ${Subject.keepsPrefix}.${key} naming another process`);
      break;
    }
  }
}
