/**
 * Credentials that expire and are renewed (decision 0150), on a real demo mesh from `mesh up
 * --demo --credential-lifetime-ms`: with a lifetime of a few seconds, the host's, the runtime's
 * and counter's JWTs are renewed with the same key before they expire, also across a kill -9 of
 * the controller; nothing restarts (the same pids), each process logs in again once per expiry
 * (the host's log says each), the tools keep answering under a constant caller, and nothing is
 * revoked.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { readCredential } from "@mesh/bus";
import { freePort, stretched, waitFor } from "@mesh/bus/testing";
import { ConstantLoad, DemoMesh } from "../testing/demo-mesh.js";

/**
 * A few seconds, stretched on a loaded machine. A renewed JWT reaches its holder with a third of
 * the lifetime left (controller, composition, host), so the lifetime must be over three times
 * that trip: with 2 s (8 s stretched) a `mesh up --demo` building its examples on a machine at
 * load 20 never came up — every login was refused as expired before the renewal arrived, on this
 * code and on the code before the connection-state change alike.
 */
const LIFETIME_MS = stretched(4_000);

let mesh: DemoMesh | undefined;
let root = "";

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mesh-renewal-"));
  mesh = new DemoMesh({
    root,
    port: await freePort(),
    node: "renew-1",
    args: ["--credential-lifetime-ms", String(LIFETIME_MS)],
  });
  await mesh.up();
});

after(async () => {
  await mesh?.stop();
  await rm(root, { recursive: true, force: true });
});

/** A JWT's claims (its signature is not checked here). */
const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as {
    sub: string;
    exp?: number;
  };

/** How often the host's log says a line matching `pattern`. */
async function hostSays(pattern: RegExp): Promise<number> {
  const log = await readFile(join(root, "logs", "mesh", "host.log"), "utf8").catch(() => "");
  return log.split("\n").filter((line) => pattern.test(line)).length;
}

describe("credentials that expire and are renewed, on a demo mesh", () => {
  test("the host, the runtime and counter keep their processes and their keys through renewals and a controller killed; each logs in again once per expiry", async () => {
    assert.ok(mesh !== undefined);
    const hostFile = join(root, "credentials", "host.json");
    const pids = async () =>
      Object.fromEntries(
        await Promise.all(
          (["host", "runtime", "counter"] as const).map(async (k) => [
            k,
            (await mesh?.pidsOf(k))?.join(","),
          ]),
        ),
      ) as Record<string, string>;
    const before = await pids();
    const jwts = new Set<string>();
    const first = await readCredential(hostFile);
    assert.ok(first.jwt !== undefined && claimsOf(first.jwt).exp !== undefined, "it expires");
    jwts.add(first.jwt);
    const seeHost = async (): Promise<number> => {
      const jwt = (await readCredential(hostFile).catch(() => first)).jwt;
      if (jwt !== undefined) jwts.add(jwt);
      return jwts.size;
    };
    const load = new ConstantLoad(mesh);
    const renewals = { interval: 200, timeout: 60_000 + 4 * LIFETIME_MS };
    await waitFor(async () => (await seeHost()) >= 3, { ...renewals, what: "two renewals" });
    for (const pid of await mesh.pidsOf("controller")) process.kill(pid, "SIGKILL");
    await waitFor(async () => (await seeHost()) >= 5, {
      ...renewals,
      what: "two renewals by the controller mesh up started again",
    });
    const calls = await load.stop();

    assert.equal(new Set([...jwts].map((j) => claimsOf(j).sub)).size, 1, "the host's key stays");
    assert.deepEqual(await pids(), before, "nothing restarted");
    assert.ok(await mesh.healthy(), "every module healthy");
    assert.ok((await mesh.call("hello", "greet", { name: "Ada" })) !== undefined);
    const taken = await hostSays(/took the host credential the controller renewed/);
    const backs = await hostSays(/the bus is back/);
    process.stdout.write(
      `# ${jwts.size} host JWTs, ${taken} taken; the host logged in again ${backs} times; ` +
        `${calls.failed} failed calls of ${calls.failed + calls.answered}\n`,
    );
    assert.ok(taken >= jwts.size - 1, "the host took each renewal");
    assert.ok(backs >= 1, "the server closed the host's connection at an expiry");
    // Each JWT it held expired once, and it logged in again with the next: never more.
    assert.ok(backs <= taken, `at most one login per renewal (${backs} of ${taken})`);
    const revoked = JSON.parse(
      await readFile(join(root, "accounts", "revocations.json"), "utf8").catch(() => "{}"),
    ) as { revocations?: Record<string, number> };
    assert.equal(
      Object.keys(revoked.revocations ?? {}).filter((k) => k === claimsOf(first.jwt ?? "").sub)
        .length,
      0,
      "a renewal revokes nothing",
    );
  });

  test("a host stopped for longer than its JWT lives comes back on its own: it asks with its renewal login, and its modules log in again", async () => {
    assert.ok(mesh !== undefined);
    const [host] = await mesh.pidsOf("host");
    assert.ok(host !== undefined);
    const lapsed = claimsOf(
      (await readCredential(join(root, "credentials", "host.json"))).jwt ?? "",
    );
    const asked = await hostSays(/asked for its credential/);
    process.kill(host, "SIGSTOP");
    try {
      // Past the expiry of the JWT the host holds, and of its modules' ones it last wrote.
      const until = (lapsed.exp ?? 0) * 1000 + LIFETIME_MS;
      await waitFor(() => Date.now() > until, {
        what: "the host's JWT expired",
        timeout: 2 * LIFETIME_MS + 30_000,
      });
    } finally {
      process.kill(host, "SIGCONT");
    }
    await waitFor(async () => (await hostSays(/asked for its credential/)) > asked, {
      what: "the host asking for its renewed credential",
      timeout: 60_000,
    });
    await waitFor(async () => (await mesh?.call("hello", "greet", { name: "Ada" })) !== undefined, {
      what: "hello answering again",
      timeout: 60_000,
    });
    await waitFor(() => mesh?.healthy() ?? Promise.resolve(false), {
      what: "every module healthy again",
      timeout: 60_000,
    });
    assert.deepEqual(await mesh.pidsOf("host"), [host], "the same host process");
  });
});
