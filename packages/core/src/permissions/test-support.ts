/** What the permissions tests share: whether a grant lets a subject through, and the KV client's subjects. */
import assert from "node:assert/strict";
import { MESH_OWNER, MESH_RESOURCES, MeshPart, type Permissions } from "@mesh/protocol";
import { isAllowed } from "./match.js";
import type { PartManifest } from "./parts.js";

export const can = (p: Permissions, subject: string): boolean => isAllowed(p, "publish", subject);
export const hears = (p: Permissions, subject: string): boolean =>
  isAllowed(p, "subscribe", subject);

/** Which subjects a grant must let through, and which it must not. */
export interface Expected {
  readonly allowed?: readonly string[];
  readonly refused?: readonly string[];
}

function assertGrant(p: Permissions, direction: "publish" | "subscribe", expected: Expected) {
  for (const subject of expected.allowed ?? []) {
    assert.ok(isAllowed(p, direction, subject), `${direction} ${subject}: not allowed`);
  }
  for (const subject of expected.refused ?? []) {
    assert.equal(isAllowed(p, direction, subject), false, `${direction} ${subject}: not refused`);
  }
}

/** Asserts that `p` may publish each of `allowed` and none of `refused`. */
export const assertPublish = (p: Permissions, expected: Expected): void =>
  assertGrant(p, "publish", expected);
/** Asserts that `p` may subscribe to each of `allowed` and none of `refused`. */
export const assertSubscribe = (p: Permissions, expected: Expected): void =>
  assertGrant(p, "subscribe", expected);

/** The exact subjects the v3 client sends (docs/nats.md §1.1), for a bucket with allow_direct. */
export const kv = {
  get: (bucket: string, key: string) => `$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.${key}`,
  getByRevision: (bucket: string) => `$JS.API.DIRECT.GET.KV_${bucket}`,
  msgGet: (bucket: string) => `$JS.API.STREAM.MSG.GET.KV_${bucket}`,
  watch: (bucket: string, filter = ">") =>
    `$JS.API.CONSUMER.CREATE.KV_${bucket}.oc_X_1.$KV.${bucket}.${filter}`,
  keysInfo: (bucket: string) => `$JS.API.CONSUMER.INFO.KV_${bucket}.oc_X_1`,
  put: (bucket: string, key: string) => `$KV.${bucket}.${key}`,
  fc: (bucket: string) => `$JS.FC.KV_${bucket}.oc_X_1.abc`,
  /** What a reader of a bucket sends: a get of `key`, a watch of it all, its keys, flow control. */
  reads: (bucket: string, key: string) => [
    kv.get(bucket, key),
    kv.watch(bucket),
    kv.keysInfo(bucket),
    kv.fc(bucket),
  ],
};

/**
 * A mesh part whose manifest names every mesh resource it may (decision 0122): the widest grant
 * a part can be derived, for tests over every principal.
 */
export const EVERY_RESOURCE_PART: PartManifest = {
  module: MeshPart.assigner,
  reads: [...MESH_RESOURCES]
    .filter(([, r]) => r.may !== "write")
    .map(([name]) => `${MESH_OWNER}/${name}`),
  writes: [...MESH_RESOURCES]
    .filter(([, r]) => r.may !== "read")
    .map(([name]) => `${MESH_OWNER}/${name}`),
};
