import assert from "node:assert/strict";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { SealCache } from "./seal-cache.js";
import { Vault } from "./vault.js";
import { newKeys } from "./test-support.js";
import { unseal } from "@mesh/bus";
import { withTempDir } from "@mesh/bus/testing";

describe("Vault", () => {
  it("makes its key once (0600) and opens only what it sealed for the same key name", async () => {
    await withTempDir("mesh-vault-", async (dir) => {
      const path = join(dir, "vault.key");
      const vault = await Vault.open(path);
      assert.equal(((await stat(path)).mode & 0o777).toString(8), "600");
      const sealed = vault.seal("s3cret", "hello.api-token");
      assert.equal((await Vault.open(path)).open(sealed, "hello.api-token").toString(), "s3cret");
      assert.throws(
        () => vault.open(sealed, "other.api-token"),
        (e) => isMeshError(e, ErrorCode.INVALID_VALUE),
      );
    });
  });

  it("two controllers opening a vault with no key yet share one key (the second once failed with EEXIST)", async () => {
    await withTempDir("mesh-vault-", async (dir) => {
      const path = join(dir, "vault.key");
      const [a, b] = await Promise.all([Vault.open(path), Vault.open(path)]);
      assert.equal(b.open(a.seal("s3cret", "m.t"), "m.t").toString(), "s3cret");
    });
  });
});

describe("SealCache", () => {
  it("reuses a sealed value while need, content and key are unchanged, also after a restart", async () => {
    await withTempDir("mesh-seals-", async (dir) => {
      const keys = newKeys();
      const input = {
        node: "n1",
        needId: "hello.need-broker",
        publicKey: keys.publicKey,
        plaintext: "{}",
      };
      const cache = new SealCache({ dir });
      const first = await cache.sealFor(input);
      assert.equal(await cache.sealFor(input), first);
      await cache.flush();
      const restarted = new SealCache({ dir });
      assert.equal(await restarted.sealFor(input), first);
      assert.equal(restarted.sealsMade, 0);
      assert.notEqual(
        await restarted.sealFor({ ...input, plaintext: "{ }" }),
        first,
        "content moved",
      );
      const other = newKeys();
      const resealed = await restarted.sealFor({ ...input, publicKey: other.publicKey });
      assert.equal(unseal(other.privateKey, resealed, input.needId).toString(), "{}", "key moved");
    });
  });
});
