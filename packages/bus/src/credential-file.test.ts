import { test } from "node:test";
import assert from "node:assert/strict";
import { chmod, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ErrorCode, isMeshError, type Credential } from "@mesh/protocol";
import { credentialInbox, readCredential, writeCredential } from "./credential-file.js";
import { withTempDir } from "./testing/fixtures.js";

const sample: Credential = {
  servers: ["nats://127.0.0.1:4222"],
  user: "n1.hello",
  password: "s3cret-password",
  node: "n1",
  module: "hello",
};

const withDir = (fn: (dir: string) => Promise<void>) => withTempDir("mesh-cred-", fn);

test("a written credential is mode 0600 and reads back the same", () =>
  withDir(async (dir) => {
    const path = join(dir, "nested", "cred.json");
    await writeCredential(path, sample);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.deepEqual(await readCredential(path), sample);
  }));

for (const mode of [0o644, 0o640, 0o604, 0o660, 0o666, 0o700, 0o620]) {
  test(`a credential file with mode ${mode.toString(8)} is refused as exposed`, () =>
    withDir(async (dir) => {
      const path = join(dir, "cred.json");
      await writeCredential(path, sample);
      await chmod(path, mode);
      await assert.rejects(
        readCredential(path),
        (error) => isMeshError(error, ErrorCode.CREDENTIAL_EXPOSED) && error.path === path,
      );
    }));
}

test("a credential file with mode 0400 is accepted (owner-only)", () =>
  withDir(async (dir) => {
    const path = join(dir, "cred.json");
    await writeCredential(path, sample);
    await chmod(path, 0o400);
    assert.equal((await readCredential(path)).user, sample.user);
  }));

test("a missing file, bad JSON and a wrong shape are each CREDENTIAL_INVALID", () =>
  withDir(async (dir) => {
    await assert.rejects(readCredential(join(dir, "none.json")), (e) =>
      isMeshError(e, ErrorCode.CREDENTIAL_INVALID),
    );
    const bad = join(dir, "bad.json");
    await writeFile(bad, "{ not json", { mode: 0o600 });
    await assert.rejects(readCredential(bad), (e) => isMeshError(e, ErrorCode.CREDENTIAL_INVALID));
    const shape = join(dir, "shape.json");
    await writeFile(shape, JSON.stringify({ ...sample, node: "Not A Name" }), { mode: 0o600 });
    await assert.rejects(readCredential(shape), (e) =>
      isMeshError(e, ErrorCode.CREDENTIAL_INVALID),
    );
  }));

test("writing refuses a credential that is not well-formed", () =>
  withDir(async (dir) => {
    await assert.rejects(writeCredential(join(dir, "c.json"), { ...sample, fingerprint: "ab:cd" }));
  }));

test("the inbox prefix derives from node and module", () => {
  assert.equal(credentialInbox(sample), "_INBOX.n1.hello");
});

test("the operator speaks with NATS's default inbox, like the nats CLI", () => {
  assert.equal(credentialInbox({ ...sample, module: "operator" }), undefined);
});
