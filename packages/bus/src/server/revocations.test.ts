import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { addRevocation, pruneRevocations, type RevocationList } from "./revocations.js";

const empty = (): RevocationList => ({ revocations: {}, expires: {} });

describe("revocations", () => {
  it("prunes a revocation once every JWT it covers expired, and a margin more", () => {
    const list = empty();
    addRevocation(list, "UJOIN", 100, 200);
    addRevocation(list, "UHOST", 100);
    assert.equal(pruneRevocations(list, 200 + 600), 0, "within the margin: kept");
    assert.equal(pruneRevocations(list, 200 + 601), 1);
    assert.deepEqual(list, { revocations: { UHOST: 100 }, expires: {} });
    assert.equal(pruneRevocations(list, 1e12), 0, "a JWT without expiry: kept for good");
  });

  it("keeps the later second and the later expiry; a key that ever had a JWT without one never expires", () => {
    const list = empty();
    addRevocation(list, "UA", 100, 300);
    addRevocation(list, "UA", 50, 400);
    assert.deepEqual(list, { revocations: { UA: 100 }, expires: { UA: 400 } });
    addRevocation(list, "UA", 120);
    assert.deepEqual(list, { revocations: { UA: 120 }, expires: {} });
    addRevocation(list, "UA", 130, 500);
    assert.deepEqual(list, { revocations: { UA: 130 }, expires: {} }, "still never expires");
    assert.equal(pruneRevocations(list, 1e12, 0), 0);
  });
});
