import { test } from "node:test";
import assert from "node:assert/strict";
import { chmod, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { withTempDir } from "./testing/fixtures.js";
import { generateNodeKeys, loadOrCreateNodeKeys, seal, unseal } from "./sealing.js";

test("a sealed value opens with the node's key and context, and only then", () => {
  const node = generateNodeKeys();
  const other = generateNodeKeys();
  const sealed = seal(node.publicKey, "pa$$word", "hello.need-broker");
  assert.equal(unseal(node.privateKey, sealed, "hello.need-broker").toString(), "pa$$word");
  assert.throws(
    () => unseal(other.privateKey, sealed, "hello.need-broker"),
    (e) => isMeshError(e, ErrorCode.INVALID_VALUE),
  );
  assert.throws(
    () => unseal(node.privateKey, sealed, "board.need-broker"),
    (e) => isMeshError(e, ErrorCode.INVALID_VALUE),
  );
});

test("sealing twice gives different bytes (a fresh ephemeral key and nonce each time)", () => {
  const node = generateNodeKeys();
  assert.notEqual(seal(node.publicKey, "x", "c"), seal(node.publicKey, "x", "c"));
});

test("a changed byte anywhere is refused", () => {
  const node = generateNodeKeys();
  const sealed = seal(node.publicKey, "secret value", "c");
  const parts = sealed.split(".");
  for (let i = 1; i < parts.length; i++) {
    const bytes = Buffer.from(parts[i]!, "base64url");
    bytes[0] = bytes[0]! ^ 1;
    const changed = [...parts];
    changed[i] = bytes.toString("base64url");
    assert.throws(
      () => unseal(node.privateKey, changed.join("."), "c"),
      (e) => isMeshError(e, ErrorCode.INVALID_VALUE),
      `part ${i}`,
    );
  }
  assert.throws(
    () => unseal(node.privateKey, "v2.a.b.c.d", "c"),
    (e) => isMeshError(e, ErrorCode.INVALID_VALUE),
  );
});

test("a public key that is not X25519 is refused", () => {
  assert.throws(
    () => seal(Buffer.from("not a key").toString("base64"), "x", "c"),
    (e) => isMeshError(e, ErrorCode.INVALID_VALUE),
  );
});

test("the node key file is made 0600 once and read back the same; an exposed one is refused", async () => {
  await withTempDir("mesh-key-", async (dir) => {
    const path = join(dir, "keys", "node.key");
    const first = await loadOrCreateNodeKeys(path);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    const again = await loadOrCreateNodeKeys(path);
    assert.equal(again.publicKey, first.publicKey);
    assert.equal(unseal(again.privateKey, seal(first.publicKey, "x", "c"), "c").toString(), "x");
    await chmod(path, 0o644);
    await assert.rejects(loadOrCreateNodeKeys(path), (e) =>
      isMeshError(e, ErrorCode.CREDENTIAL_EXPOSED),
    );
  });
});

// Issue 27: the node key was written with "wx" and no fsync: a power cut could leave an empty or
// cut key under its name, and a second process making it at the same time failed with EEXIST.
test("the node key is made once and whole: made by several at once, every one gets the same key", async () => {
  await withTempDir("mesh-key-", async (dir) => {
    const path = join(dir, "node.key");
    const made = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateNodeKeys(path)));
    assert.equal(new Set(made.map((k) => k.publicKey)).size, 1);
    assert.equal((await loadOrCreateNodeKeys(path)).publicKey, made[0]?.publicKey);
    assert.deepEqual(await readdir(dir), ["node.key"], "no temporary left beside it");
  });
});
