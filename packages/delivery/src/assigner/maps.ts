/**
 * What the assigner's process keeps in memory: one map per bucket a pass reads, as core's
 * `AssignerSnapshot` names them, and the helpers that pick a bucket's map.
 */
import {
  canonicalJson,
  emptySnapshot,
  type AssignerSnapshot,
  type AssignerWrite,
  type FleetSource,
  type HaveRecord,
} from "@mesh/core";
import { Bucket, ErrorCode, MeshError, Stream, targetModuleKey, type Have } from "@mesh/protocol";

export type Maps = {
  -readonly [K in keyof Omit<AssignerSnapshot, "now" | "own">]: Map<
    string,
    AssignerSnapshot[K] extends ReadonlyMap<string, infer V> ? V : never
  >;
} & {
  own: {
    -readonly [K in keyof AssignerSnapshot["own"]]: Map<
      string,
      AssignerSnapshot["own"][K] extends ReadonlyMap<string, infer V> ? V : never
    >;
  };
};

/** Empty maps, one per bucket of the snapshot. */
export function newMaps(): Maps {
  const empty = emptySnapshot();
  const fresh = (of: object) =>
    Object.fromEntries(
      Object.entries(of).flatMap(([k, v]) => (v instanceof Map ? [[k, new Map()]] : [])),
    );
  return { ...fresh(empty), own: fresh(empty.own) } as unknown as Maps;
}

/** The assigner's own buckets (those it writes), and the map of each. */
const OWN_MAPS = {
  [Bucket.wants]: "wants",
  [Bucket.compositions]: "compositions",
  [Bucket.differences]: "differences",
  [Bucket.asks]: "asks",
  [Bucket.rollouts]: "rollouts",
  // mesh-config whole: a config rollout writes nodes' values (decision 0131) and leaves the
  // operator's own be, so a pass reads every value as it stands.
  [Bucket.config]: "config",
  [Bucket.configWaves]: "configWaves",
} as const satisfies Record<AssignerWrite["bucket"], keyof Maps["own"]>;

/** The buckets a pass writes. */
export const OWN_BUCKETS = Object.keys(OWN_MAPS) as ReadonlyArray<AssignerWrite["bucket"]>;

/** The buckets it only watches, and the map each one's values are kept in. */
const WATCHED_MAPS: Readonly<Record<string, Exclude<keyof Maps, "own">>> = {
  [Bucket.modules]: "registrations",
  [Bucket.assignments]: "assignments",
  [Bucket.presence]: "presence",
  [Bucket.candidates]: "candidates",
  [Bucket.builds]: "builds",
  [Bucket.manifests]: "manifests",
  [Bucket.puts]: "puts",
  [Bucket.retries]: "retries",
  [Bucket.answers]: "answers",
  [Bucket.composed]: "composed",
  [Bucket.rolloutPolicies]: "rolloutPolicies",
  [Bucket.rolloutSteers]: "rolloutSteers",
  [Bucket.configRollouts]: "configRollouts",
};

/** The map of one of the assigner's own buckets. */
export function ownMapOf(maps: Maps, bucket: AssignerWrite["bucket"]): Map<string, unknown> {
  return maps.own[OWN_MAPS[bucket]];
}

/** The map a watched bucket's values are kept in. */
export function mapOf(maps: Maps, bucket: string): Map<string, unknown> {
  if (Object.hasOwn(OWN_MAPS, bucket)) return ownMapOf(maps, bucket as AssignerWrite["bucket"]);
  const watched = Object.hasOwn(WATCHED_MAPS, bucket) ? WATCHED_MAPS[bucket] : undefined;
  if (watched !== undefined) return maps[watched];
  throw new MeshError(ErrorCode.INTERNAL, `the assigner does not keep ${bucket}`);
}

/** `all.<module>`; undefined for a name no key can carry (its change then touches every node). */
export function allKey(module: string): string | undefined {
  try {
    return targetModuleKey({ all: true }, module);
  } catch {
    return undefined;
  }
}

/** Why the assigner stops: a bucket it needs is not heard (the mirror names it in the error's key). */
export function notHeard(error: unknown): MeshError {
  const bucket = error instanceof MeshError && error.key !== undefined ? error.key : "(unknown)";
  if (error instanceof MeshError && error.code === ErrorCode.WATCH_ENDED) {
    return new MeshError(
      ErrorCode.WATCH_ENDED,
      `${error.message}; the assigner stops rather than decide from what it no longer hears — its supervisor starts it again`,
      { key: bucket, cause: error },
    );
  }
  return unavailable(
    bucket,
    error instanceof MeshError && error.cause !== undefined ? error.cause : error,
    false,
  );
}

/** Why a bucket could not be watched, naming the bucket and the grant that should allow it. */
export function unavailable(bucket: string, error: unknown, optional: boolean): MeshError {
  const detail = error instanceof Error ? error.message : String(error);
  return new MeshError(
    ErrorCode.BUCKET_UNAVAILABLE,
    optional
      ? `the bucket ${bucket} cannot be opened (${detail}); wants are written without puts, and a later pass opens it again`
      : `the assigner cannot open the bucket ${bucket} (${detail}); it needs it to decide from the whole mesh, so it stops. ` +
          `Its credential must carry the assigner's grant (read of ${bucket}: its manifest's reads, packages/delivery/parts/mesh-assigner/mesh.yaml, decision 0122) and the bucket must exist: run \`mesh up\`, then start the assigner again`,
    { key: bucket, cause: error },
  );
}

/** Whether a change of a presence moved its heartbeat's time alone. */
export function heartbeatOnly(before: unknown, after: unknown): boolean {
  if (before === undefined || after === undefined) return false;
  return canonicalJson(withoutHeartbeat(before)) === canonicalJson(withoutHeartbeat(after));
}

/** A presence without its heartbeat's time. */
function withoutHeartbeat(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  const { heartbeat: _heartbeat, ...rest } = value as Record<string, unknown>;
  return rest;
}

/** Folded as core folds them (the controller's assigner keeper reads them the same way). */
export { foldHave } from "@mesh/core";

/** The map of the fleet's state (the summary's read model) a bucket's change moves, if any. */
export function summarySource(bucket: string): FleetSource | undefined {
  return SUMMARY_SOURCES[bucket];
}

const SUMMARY_SOURCES: Readonly<Record<string, FleetSource>> = {
  [Bucket.presence]: "presence",
  [Bucket.assignments]: "assignments",
  [Bucket.modules]: "registrations",
  [Bucket.builds]: "builds",
  [Bucket.wants]: "wants",
  [Bucket.have]: "have",
  [Bucket.differences]: "differences",
  [Bucket.compositions]: "compositions",
  [Bucket.asks]: "asks",
  [Bucket.answers]: "answers",
  [Stream.conditions]: "conditions",
};

/**
 * Each node's latest report, read through the have records (history and all) the assigner
 * keeps, without copying them: what the summary reads as the fleet's `have`.
 */
export class CurrentHave implements ReadonlyMap<string, Have> {
  readonly #records: ReadonlyMap<string, HaveRecord>;

  constructor(records: ReadonlyMap<string, HaveRecord>) {
    this.#records = records;
  }

  get size(): number {
    let n = 0;
    for (const r of this.#records.values()) if (r.current !== undefined) n += 1;
    return n;
  }

  get(key: string): Have | undefined {
    return this.#records.get(key)?.current;
  }

  has(key: string): boolean {
    return this.#records.get(key)?.current !== undefined;
  }

  *entries(): MapIterator<[string, Have]> {
    for (const [key, r] of this.#records) if (r.current !== undefined) yield [key, r.current];
  }

  *keys(): MapIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<Have> {
    for (const [, have] of this.entries()) yield have;
  }

  forEach(fn: (value: Have, key: string, map: ReadonlyMap<string, Have>) => void): void {
    for (const [key, have] of this.entries()) fn(have, key, this);
  }

  [Symbol.iterator](): MapIterator<[string, Have]> {
    return this.entries();
  }
}
