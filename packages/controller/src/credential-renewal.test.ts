/**
 * Credentials that expire and are renewed (decision 0150), on a real nats-server in accounts
 * mode with a lifetime of a few seconds: the controller signs a module's key again before its JWT
 * expires and puts it in the node's composition; a connection that follows its credential file
 * (as the host writes it) is closed by the server at each expiry and logs in again at once with
 * the renewed JWT — one login per lifetime, no storm — also across a restart of the controller;
 * a node it refuses keeps its composition with only its credentials renewed; and a revocation is pruned from the account JWT once the JWTs it covers have expired.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import { Bucket, Credential, nodeModuleKey, stateBucket, type Composed } from "@mesh/protocol";
import { fingerprintOf } from "@mesh/core";
import { KvBucket, MeshBus, ensureLayout, writeCredential, type NodeKeys } from "@mesh/bus";
import { AccountAuthority, readRevocationList } from "@mesh/bus/server";
import {
  credentialFor,
  deadline,
  startAccountsTestServer,
  stretched,
  waitFor,
  type AccountsTestServer,
} from "@mesh/bus/testing";
import { Controller } from "./controller.js";
import { counter, hello, newKeys, openNeed, presenceOf, viewer, wantOf } from "./test-support.js";

/** A few seconds, stretched on a loaded machine so a pass still comes before a third is left. */
const LIFETIME_MS = stretched(1_500);
const NEED = "viewer.need-broker";

/** A JWT's claims as the server reads them (its signature is not checked here). */
const payloadOf = (jwt: string): unknown =>
  JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8"));
const claimsOf = (jwt: string) => payloadOf(jwt) as { sub: string; exp?: number; iat: number };

/** The viewer's credential in a composition, opened as the host opens it. */
function viewerCredential(c: Composed, keys: NodeKeys): Credential | undefined {
  if (!c.resources.some((r) => r.id === NEED && r.type === "need" && r.sealed !== undefined))
    return undefined;
  return Credential.parse(JSON.parse(openNeed(c, NEED, keys)));
}

/** The mesh account's revocations as the server's full resolver keeps its JWT. */
async function serverRevocations(server: AccountsTestServer): Promise<Record<string, number>> {
  const dir = join(server.server.dir, "jwt");
  const files = (await readdir(dir)).filter((f) => f.startsWith(server.authority.account));
  const jwt = (await readFile(join(dir, files[0] ?? "missing"), "utf8")).trim();
  const claims = payloadOf(jwt) as { nats: { revocations?: Record<string, number> } };
  return { ...(claims.nats.revocations ?? {}) };
}

describe("credentials that expire and are renewed", () => {
  let server: AccountsTestServer;
  let admin: MeshBus;
  let dir: string;
  let accounts: AccountAuthority;
  let controller: Controller;
  const n1 = newKeys();

  const start = async (): Promise<Controller> => {
    // Its own authority, as a controller process has: revocations kept 1 s past their expiry.
    accounts = await AccountAuthority.open({
      keysPath: server.keysPath,
      revocationsPath: server.revocationsPath,
      servers: [server.url],
      pruneMarginS: 1,
    });
    const c = await Controller.create({
      bus: admin,
      dir,
      accounts,
      credentialLifetimeMs: LIFETIME_MS,
    });
    void c.run({ signal: AbortSignal.any([]) });
    await deadline(c.ready, 20_000, "the controller's first pass");
    return c;
  };
  const stop = async (): Promise<void> => {
    await controller.stop();
    await accounts.close();
  };
  const put = async (bucket: string, key: string, value: unknown) => {
    await (await KvBucket.openWith(admin, bucket, z.unknown())).put(key, value);
  };

  before(async () => {
    server = await startAccountsTestServer();
    dir = await mkdtemp(join(tmpdir(), "mesh-renewal-"));
    admin = await MeshBus.connect(
      credentialFor(server, server.admin, { node: "hub", module: "controller" }),
    );
    await ensureLayout(admin);
    controller = await start();
  });
  after(async () => {
    await stop();
    await admin.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("renews a module's JWT with its key before it expires; its connection logs in again once per expiry, also across a controller restart", async () => {
    await put(Bucket.presence, "n1", presenceOf("n1", n1));
    for (const m of [counter, viewer]) {
      await put(Bucket.manifests, fingerprintOf(m), m);
      await put(Bucket.wants, nodeModuleKey("n1", m.module), wantOf(m));
    }
    // What the host does with the composition: writes the need's file each time it moves.
    const file = join(dir, "viewer-broker.json");
    const jwts: string[] = [];
    const composed = await KvBucket.open(admin, Bucket.composed);
    const following = new AbortController();
    const seen = (async () => {
      for await (const e of composed.watch({ key: "n1", signal: following.signal })) {
        if (e.type !== "put") continue;
        const credential = viewerCredential(e.value, n1);
        if (credential?.jwt === undefined || jwts.includes(credential.jwt)) continue;
        await writeCredential(file, credential);
        jwts.push(credential.jwt);
      }
    })();
    await waitFor(() => jwts.length > 0, { what: "the viewer's first credential" });
    const first = claimsOf(jwts[0] ?? "");
    assert.ok(first.exp !== undefined, "the JWT carries an expiry");
    assert.ok(first.exp - first.iat <= Math.ceil(LIFETIME_MS / 1000), "within the lifetime");

    const bus = await MeshBus.connectWithFile(file, { say: () => undefined });
    let reconnects = 0;
    let disconnects = 0;
    const counting = (async () => {
      for await (const e of bus.events()) {
        if (e.type === "reconnected") reconnects += 1;
        if (e.type === "disconnected") disconnects += 1;
      }
    })();
    const renewals = { what: "", timeout: 30_000 + 4 * LIFETIME_MS };
    await waitFor(() => jwts.length >= 3, { ...renewals, what: "two renewals" });
    await stop();
    controller = await start();
    await waitFor(() => jwts.length >= 5, { ...renewals, what: "two renewals after a restart" });
    // Past the expiry of every JWT the connection may have logged in with but the newest.
    const lapsed = (claimsOf(jwts.at(-2) ?? "").exp ?? 0) * 1000;
    await waitFor(() => Date.now() > lapsed + 500, { what: "the last but one expiry passed" });

    // Every renewal kept the key: nothing was revoked, and the process was never given another.
    assert.equal(new Set(jwts.map((j) => claimsOf(j).sub)).size, 1);
    assert.deepEqual(accounts.revocations, {});
    // The connection still works, having logged in again at each expiry, and only then.
    await (await KvBucket.openWith(bus, stateBucket("counter", "counts"), z.unknown())).keys();
    process.stdout.write(
      `# ${jwts.length} JWTs over ${jwts.length - 1} renewals: ${disconnects} disconnects, ${reconnects} reconnects\n`,
    );
    assert.ok(reconnects >= 1, "the server closed the connection at an expiry");
    assert.ok(reconnects <= jwts.length, `at most one login per JWT (${reconnects})`);
    assert.equal(disconnects, reconnects);
    following.abort();
    await seen.catch(() => undefined);
    await bus.close();
    await counting;
  });

  it("renews the credentials of a node it refuses: what it runs stays, and keeps the bus", async () => {
    const composed = await KvBucket.open(admin, Bucket.composed);
    const before = (await composed.get("n1"))?.value;
    assert.ok(before !== undefined);
    // A want whose manifest is not there: n1 is refused, its composition kept as it is.
    await put(Bucket.wants, nodeModuleKey("n1", "hello"), wantOf(hello));
    const jwts = new Set<string>();
    const ids = new Set<string>();
    const watching = new AbortController();
    const seen = (async () => {
      for await (const e of composed.watch({ key: "n1", signal: watching.signal })) {
        if (e.type !== "put") continue;
        const jwt = viewerCredential(e.value, n1)?.jwt;
        if (jwt !== undefined) jwts.add(jwt);
        ids.add(e.value.resources.map((r) => r.id).join(","));
      }
    })();
    await waitFor(() => jwts.size >= 3, {
      what: "two renewals of the refused node's viewer",
      timeout: 30_000 + 4 * LIFETIME_MS,
    });
    watching.abort();
    await seen.catch(() => undefined);
    assert.deepEqual([...ids], [before.resources.map((r) => r.id).join(",")], "nothing else moved");
    await (await KvBucket.open(admin, Bucket.wants)).delete(nodeModuleKey("n1", "hello"));
  });

  it("prunes a revocation from the account JWT once the JWTs it covers have expired", async () => {
    const viewerKey = controller.broker.get(nodeModuleKey("n1", "viewer"))?.publicKey ?? "";
    await (await KvBucket.open(admin, Bucket.wants)).delete(nodeModuleKey("n1", "viewer"));
    await waitFor(async () => (await serverRevocations(server))[viewerKey] !== undefined, {
      what: "the unassigned viewer's revocation on the server",
    });
    // Kept with the expiry of the last JWT its key had (a renewal may have come since).
    const expiresS = (await readRevocationList(server.revocationsPath)).expires[viewerKey];
    assert.ok(expiresS !== undefined, "the revocation knows when its JWTs expire");
    // Past its expiry and the margin, the next update (another module taken away) drops it.
    await waitFor(() => Date.now() > expiresS * 1000 + 2_000, { what: "the viewer's JWT expired" });
    const counterKey = controller.broker.get(nodeModuleKey("n1", "counter"))?.publicKey ?? "";
    await (await KvBucket.open(admin, Bucket.wants)).delete(nodeModuleKey("n1", "counter"));
    await waitFor(async () => (await serverRevocations(server))[counterKey] !== undefined, {
      what: "the unassigned counter's revocation on the server",
    });
    const revocations = await serverRevocations(server);
    assert.equal(revocations[viewerKey], undefined, "the expired JWTs' revocation is pruned");
    assert.deepEqual(Object.keys(revocations), [counterKey]);
  });
});
