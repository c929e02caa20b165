/**
 * The controller's fleet feed: the buckets a composition pass reads (wants, presence, manifests,
 * secrets) and what every process keeps (a stream), the sources of the controller's reconciler;
 * each change is fed into the Fleet index, which names the nodes it moves (its keys). A watch that ends is watched again by the
 * mirror, which applies what was missed meanwhile (a key deleted too); the keeps stream is one
 * of its sources, read again from what stands.
 */
import { z } from "zod";
import {
  KvBucket,
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
  /** The secrets bucket, and the map its sealed values are kept in. */
  readonly secrets: KvBucket<SealedSecret>;
  readonly secretValues: Map<string, SealedSecret>;
}

export type FleetSources = Record<string, MirrorSource<unknown, unknown>>;

/** The sources of the controller's reconciler: what a composition pass reads. */
export async function fleetSources(o: FleetFeedOptions): Promise<FleetSources> {
  return {
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
}

/**
 * Feeds one change into the Fleet index, which names the nodes it moves (`takeDirty`). One bad
 * key (a name the layout refuses) is said and skipped, never fatal.
 */
export function feedFleet(
  o: { readonly fleet: Fleet; readonly log: (line: string) => void },
  change: MirrorChange,
): void {
  try {
    apply(o, change);
  } catch (error) {
    o.log(`controller: ignored ${change.key}: ${(error as Error).message}`);
  }
}

function apply(
  { fleet, log }: { readonly fleet: Fleet; readonly log: (line: string) => void },
  change: MirrorChange,
): void {
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
