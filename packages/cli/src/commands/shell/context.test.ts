import assert from "node:assert/strict";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { after, test } from "node:test";
import { writeCredential } from "@mesh/bus";
import { scratchFolders } from "@mesh/bus/testing";
import { makeAccountKeys, issueUserJwt, newUserKey } from "@mesh/bus/server";
import { operatorGrant } from "@mesh/core";
import { context, type NatsContext } from "./context.js";

const scratch = scratchFolders({ after });

test("in accounts mode the context names a .creds file (0600) with the signed user, never a password", async () => {
  const dir = await scratch("mesh-context-");
  const key = newUserKey();
  const jwt = await issueUserJwt(makeAccountKeys(), {
    name: "n1.operator",
    publicKey: key.publicKey,
    permissions: operatorGrant({ node: "n1" }),
  });
  const file = join(dir, "operator.json");
  await writeCredential(file, {
    servers: ["nats://127.0.0.1:4222"],
    user: "n1.operator",
    jwt,
    seed: key.seed,
    node: "n1",
    module: "operator",
  });
  const contexts = join(dir, "contexts");
  const stdout = process.stdout.write.bind(process.stdout);
  process.stdout.write = () => true;
  try {
    await context({ credential: file, dir: contexts, json: true });
  } finally {
    process.stdout.write = stdout;
  }
  const written = JSON.parse(await readFile(join(contexts, "mesh-n1.json"), "utf8")) as NatsContext;
  assert.equal(written.password, undefined);
  assert.equal(written.user, undefined);
  assert.equal(written.creds, join(contexts, "mesh-n1.creds"));
  assert.equal((await stat(written.creds)).mode & 0o777, 0o600);
  // The layout nsc writes and the nats CLI reads: the JWT, then the seed, each fenced.
  const creds = await readFile(written.creds, "utf8");
  assert.match(creds, /-----BEGIN NATS USER JWT-----\n(.+)\n------END NATS USER JWT------/);
  assert.equal(/BEGIN NATS USER JWT-----\n(.+)\n/.exec(creds)?.[1], jwt);
  assert.equal(/BEGIN USER NKEY SEED-----\n(.+)\n/.exec(creds)?.[1], key.seed);
});
