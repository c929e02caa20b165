/**
 * Seed 003's agreement test, in this repository's shape: the buckets the assigner's code opens
 * are exactly the buckets its grant lets it read, and those it writes exactly those the grant
 * lets it write — so the broker grants what the code uses, and nothing it does not.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assignerGrant } from "@mesh/core";
import { Bucket } from "@mesh/protocol";
import { ASSIGNER_BUCKETS } from "./assigner.js";
import { OWN_BUCKETS } from "./maps.js";

/** The buckets an allow list lets its holder watch (`$JS.API.CONSUMER.CREATE.KV_<b>.…`). */
function watched(allow: readonly string[]): string[] {
  const out = new Set<string>();
  for (const s of allow) {
    const m = /^\$JS\.API\.CONSUMER\.CREATE\.KV_([^.]+)\./.exec(s);
    if (m !== null) out.add(m[1] as string);
  }
  return [...out].sort();
}

/** The buckets an allow list lets its holder write (`$KV.<b>.…`). */
function written(allow: readonly string[]): string[] {
  const out = new Set<string>();
  for (const s of allow) {
    const m = /^\$KV\.([^.]+)\./.exec(s);
    if (m !== null) out.add(m[1] as string);
  }
  return [...out].sort();
}

describe("the assigner's buckets and its grant (seed 003's agreement test)", () => {
  const allow = assignerGrant({ node: "n0" }).publish.allow ?? [];

  it("reads exactly the buckets its code opens", () => {
    assert.deepEqual(watched(allow), [...new Set(ASSIGNER_BUCKETS)].sort());
  });

  it("writes exactly the buckets its code writes", () => {
    assert.deepEqual(written(allow), [...OWN_BUCKETS, Bucket.summary].sort());
  });
});
