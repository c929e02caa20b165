import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createAccount, createUser, fromPublic, fromSeed } from "@nats-io/nkeys";
import { KeyRole, decodeSeed, newKey, nodeKeyPair } from "./nkey-codec.js";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("nkeys with Node's Ed25519", () => {
  it("reads the seeds @nats-io/nkeys makes: the same public key, a signature it verifies", () => {
    for (const made of [createUser(), createAccount()]) {
      const seed = text(made.getSeed());
      const mine = nodeKeyPair(seed);
      assert.equal(mine.getPublicKey(), made.getPublicKey());
      const data = new TextEncoder().encode("nonce-1234");
      assert.ok(fromPublic(made.getPublicKey()).verify(data, mine.sign(data)));
      assert.deepEqual(mine.sign(data), made.sign(data), "Ed25519 signs deterministically");
    }
  });

  it("makes seeds @nats-io/nkeys reads back to the same public key", () => {
    for (const role of [KeyRole.user, KeyRole.account, KeyRole.operator]) {
      const key = newKey(role);
      assert.equal(fromSeed(new TextEncoder().encode(key.seed)).getPublicKey(), key.publicKey);
      assert.equal(decodeSeed(key.seed).role, role);
    }
    assert.match(newKey(KeyRole.user).seed, /^SU[A-Z2-7]{56}$/);
    assert.match(newKey(KeyRole.operator).publicKey, /^O[A-Z2-7]{55}$/);
  });

  it("refuses a seed whose checksum is wrong", () => {
    const { seed } = newKey(KeyRole.user);
    const broken = seed.slice(0, 10) + (seed[10] === "A" ? "B" : "A") + seed.slice(11);
    assert.throws(() => decodeSeed(broken), /not an nkey/);
  });
});
