import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { canonicalJson, fingerprintOf } from "./fingerprint.js";

describe("canonicalJson", () => {
  it("sorts keys at every depth and keeps array order", () => {
    assert.equal(
      canonicalJson({ b: [3, { z: 1, a: 2 }], a: null }),
      '{"a":null,"b":[3,{"a":2,"z":1}]}',
    );
  });

  it("leaves out undefined properties and writes undefined entries as null, as JSON does", () => {
    assert.equal(canonicalJson({ a: undefined, b: [undefined] }), '{"b":[null]}');
  });

  it("reads back as the same value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.deepEqual(JSON.parse(canonicalJson(value)), JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it("does not depend on the order keys were set in", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (record) => {
        const reversed = Object.fromEntries(Object.entries(record).reverse());
        assert.equal(canonicalJson(reversed), canonicalJson(record));
      }),
    );
  });

  it("refuses what JSON cannot hold without loss", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [
      Number.NaN,
      Infinity,
      1n,
      () => 1,
      Symbol("s"),
      cyclic,
      { a: [Number.NaN] },
    ]) {
      assert.throws(
        () => canonicalJson(bad),
        (error) => isMeshError(error, ErrorCode.INVALID_VALUE),
      );
    }
  });
});

describe("fingerprintOf", () => {
  it("is the SHA-256 of the canonical JSON", () => {
    const value = { b: 1, a: "x" };
    assert.equal(
      fingerprintOf(value),
      createHash("sha256").update('{"a":"x","b":1}').digest("hex"),
    );
    assert.equal(
      fingerprintOf([]),
      "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
    );
  });
});
