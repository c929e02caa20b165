/**
 * What the assigner's process keeps in memory: one map per bucket a pass reads, as core's
 * `AssignerSnapshot` names them, and the helpers that pick a bucket's map.
 */
import { emptySnapshot, type AssignerSnapshot, type AssignerWrite } from "@mesh/core";
import { Bucket, ErrorCode, MeshError, targetModuleKey } from "@mesh/protocol";

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
  const maps = {} as Record<string, unknown>;
  for (const [k, v] of Object.entries(emptySnapshot())) if (v instanceof Map) maps[k] = new Map();
  maps["own"] = {
    wants: new Map(),
    compositions: new Map(),
    differences: new Map(),
    asks: new Map(),
    conditions: new Map(),
  };
  return maps as unknown as Maps;
}

/** The map of one of the assigner's own buckets. */
export function ownMapOf(maps: Maps, bucket: AssignerWrite["bucket"]): Map<string, unknown> {
  switch (bucket) {
    case Bucket.wants:
      return maps.own.wants;
    case Bucket.compositions:
      return maps.own.compositions;
    case Bucket.differences:
      return maps.own.differences;
    case Bucket.asks:
      return maps.own.asks;
  }
}

/** The map a watched bucket's values are kept in. */
export function mapOf(maps: Maps, bucket: string): Map<string, unknown> {
  switch (bucket) {
    case Bucket.modules:
      return maps.registrations;
    case Bucket.assignments:
      return maps.assignments;
    case Bucket.presence:
      return maps.presence;
    case Bucket.candidates:
      return maps.candidates;
    case Bucket.builds:
      return maps.builds;
    case Bucket.manifests:
      return maps.manifests;
    case Bucket.puts:
      return maps.puts;
    case Bucket.retries:
      return maps.retries;
    case Bucket.answers:
      return maps.answers;
    case Bucket.composed:
      return maps.composed;
    case Bucket.wants:
      return maps.own.wants;
    case Bucket.compositions:
      return maps.own.compositions;
    case Bucket.differences:
      return maps.own.differences;
    case Bucket.asks:
      return maps.own.asks;
    default:
      throw new MeshError(ErrorCode.INTERNAL, `the assigner does not keep ${bucket}`);
  }
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
          `Its credential must carry the assigner's grant (read of ${bucket}, core's assignerGrant) and the bucket must exist: run \`mesh up\`, then start the assigner again`,
    { key: bucket, cause: error },
  );
}
