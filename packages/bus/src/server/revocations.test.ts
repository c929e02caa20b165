import assert from "node:assert/strict";
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import {
  addRevocation,
  appendRevocations,
  dropJournal,
  journalOf,
  pruneRevocations,
  readRevocationList,
  type RevocationList,
} from "./revocations.js";

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

  it("reads the list with its journal applied in order; a torn last line is dropped, another bad line refused", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mesh-revocations-"));
    const path = join(dir, "revocations.json");
    try {
      await writeFile(path, JSON.stringify({ revocations: { UA: 100 }, expires: { UA: 300 } }));
      await appendRevocations(path, { UB: 110, UA: 120 }, { UB: 400, UA: 500 });
      await appendRevocations(path, { UB: 130 });
      const before = await readFile(path, "utf8");
      assert.deepEqual(await readRevocationList(path), {
        revocations: { UA: 120, UB: 130 },
        expires: { UA: 500 },
      });
      assert.equal(await readFile(path, "utf8"), before, "an append leaves the list as it was");
      await appendFile(journalOf(path), '{"key":"UC","at":');
      assert.deepEqual(Object.keys((await readRevocationList(path)).revocations), ["UA", "UB"]);
      await appendFile(journalOf(path), '\n{"key":"UD","at":1}\n');
      await assert.rejects(readRevocationList(path), (e: unknown) =>
        isMeshError(e, ErrorCode.INVALID_VALUE),
      );
      await dropJournal(path);
      assert.deepEqual(await readRevocationList(path), {
        revocations: { UA: 100 },
        expires: { UA: 300 },
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
