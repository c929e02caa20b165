/**
 * The revocation pusher (revocation-pusher.ts) on a real nats-server in accounts mode: a burst
 * of revocations is one account update, a spent join user waits for its batch, and a principal
 * taken away is refused within 2 s whatever waits; gathered ones wait at least
 * GATHERED_COST_TIMES the last update's cost, and an update the bus did not take is not queued
 * again behind itself.
 */
import { natsOf } from "@mesh/bus/internal";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { MeshBus } from "@mesh/bus";
import { accountsSuite, deadline, refusesLogin, waitFor } from "@mesh/bus/testing";
import { Broker, PrincipalKind, hostPrincipal, type DesiredPrincipal } from "./broker.js";
import { GATHERED_COST_TIMES, RevocationPusher, Urgency } from "./revocation-pusher.js";
import { Vault } from "./vault.js";

const vault = Vault.withKey(randomBytes(32));

/** A one-time join user as the controller issues it: it may only ask mesh.join. */
const joinPrincipal = (id: string): DesiredPrincipal => ({
  user: `join.${id}`,
  node: "join",
  module: id,
  kind: PrincipalKind.join,
  permissions: { publish: { allow: ["mesh.join"] }, subscribe: { allow: [`_INBOX.${id}.>`] } },
  expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
});

describe("the revocation pusher on a real bus", () => {
  const pushers: RevocationPusher[] = [];
  after(() => {
    for (const p of pushers) p.close();
  });
  const suite = accountsSuite("mesh-pusher-", { before, after });

  const open = async (sub: string, options: { gatherMs?: number; gatheredEveryMs?: number }) => {
    const pusher = new RevocationPusher({ accounts: suite.server.authority, ...options });
    pushers.push(pusher);
    const broker = await Broker.open({
      dir: join(suite.dir, sub),
      vault,
      accounts: suite.server.authority,
      servers: [suite.server.url],
      pusher,
    });
    return { pusher, broker };
  };

  it("gathers a burst of revocations from several commits into one account update", async () => {
    const { pusher, broker } = await open("burst", { gatherMs: 3_000 });
    const hosts = ["b1", "b2", "b3"];
    for (const n of hosts) await broker.ensure(hostPrincipal(n));
    await broker.commit();
    const credentials = hosts.map((n) => broker.credential(`${n}.host`));
    const before = suite.server.authority.updatesPushed;
    for (const n of hosts) {
      broker.revoke(`${n}.host`);
      await broker.commit();
    }
    await deadline(pusher.settled(), 10_000, "the burst's update");
    assert.equal(suite.server.authority.updatesPushed - before, 1, "one update for the burst");
    for (const c of credentials) assert.equal(await refusesLogin(c), true, c.user);
  });

  it("revokes a spent join user by the next batch, and a principal taken away within 2 s", async () => {
    const { pusher, broker } = await open("joins", { gatheredEveryMs: 4_000 });
    for (const p of [joinPrincipal("a"), joinPrincipal("b"), hostPrincipal("n1")])
      await broker.ensure(p);
    await broker.commit();
    const [joinA, joinB] = [broker.credential("join.a"), broker.credential("join.b")];
    const host = broker.credential("n1.host");
    const before = suite.server.authority.updatesPushed;
    broker.revoke("join.a");
    await broker.commit();
    assert.equal(pusher.gathering, 1, "the join user's revocation waits for its batch");
    assert.equal(suite.server.authority.updatesPushed, before, "no update of its own at once");
    await waitFor(() => refusesLogin(joinA), {
      what: "the spent join user refused",
      timeout: 20_000,
    });
    assert.equal(suite.server.authority.updatesPushed, before + 1);
    // A principal taken away does not wait for a batch, and takes the waiting join users along.
    const live = await MeshBus.connect(host, { say: () => undefined });
    const closed = (async () => {
      for await (const s of natsOf(live).nc.status()) if (s.type === "disconnect") return;
    })();
    broker.revoke("join.b");
    await broker.commit();
    const revoking = Date.now();
    broker.revoke("n1.host");
    await broker.commit();
    await deadline(closed, 2_000, "the revoked host's live connection closing");
    const refusedMs = Date.now() - revoking;
    await live.close().catch(() => undefined);
    await deadline(pusher.settled(), 10_000, "the urgent update");
    assert.equal(pusher.gathering, 0, "the waiting join user went with it");
    assert.equal(await refusesLogin(joinB), true);
    assert.equal(await refusesLogin(host), true);
    process.stdout.write(`# a host taken away: refused in ${refusedMs} ms\n`);
  });

  it("gives gathered revocations an update of their own no sooner than 50 times the last one took", async () => {
    const pushed: Array<{ at: number; ms: number }> = [];
    const pusher = new RevocationPusher({
      accounts: suite.server.authority,
      gatheredEveryMs: 100,
      onPushed: ({ ms }) => pushed.push({ at: Date.now() - ms, ms }),
    });
    pushers.push(pusher);
    const gathered = (id: string) => new Map([[`K${id}`, { at: Math.floor(Date.now() / 1000) }]]);
    pusher.add(gathered("one"), Urgency.gathered);
    await waitFor(() => Promise.resolve(pushed.length === 1), { what: "the first update" });
    pusher.add(gathered("two"), Urgency.gathered);
    await waitFor(() => Promise.resolve(pushed.length === 2), {
      what: "the second update",
      timeout: 120_000,
    });
    const [first, second] = pushed as [{ at: number; ms: number }, { at: number; ms: number }];
    const waited = second.at - first.at;
    assert.ok(
      waited >= Math.max(100, GATHERED_COST_TIMES * first.ms),
      `the second began ${waited} ms after the first, which took ${first.ms} ms`,
    );
  });

  it("does not push again, behind itself, an update the bus did not take", async () => {
    const tries: number[] = [];
    const deferred: number[] = [];
    // An authority whose bus takes 300 ms and then does not answer: the server's side is not
    // the point here, the pusher's waits are.
    const failing = {
      push: async () => {
        tries.push(Date.now());
        await new Promise((r) => setTimeout(r, 300));
        throw new Error("timeout");
      },
    } as unknown as typeof suite.server.authority;
    const pusher = new RevocationPusher({
      accounts: failing,
      gatheredEveryMs: 100,
      onDeferred: (_, inMs) => deferred.push(inMs),
    });
    pushers.push(pusher);
    pusher.add(new Map([["Kgathered", { at: 1 }]]), Urgency.gathered);
    await waitFor(() => Promise.resolve(deferred.length === 1), { what: "the first failure" });
    // Gathered alone: no retry on the backoff, the next waits its period (50 × 300 ms).
    assert.ok((deferred[0] ?? 0) >= GATHERED_COST_TIMES * 300, `waits ${deferred[0]} ms`);
    assert.equal(tries.length, 1);
    // Urgent: tried again, but not sooner than the failed one took.
    pusher.add(new Map([["Kurgent", { at: 1 }]]));
    await waitFor(() => Promise.resolve(tries.length >= 3), { what: "two urgent tries" });
    const [, second, third] = tries as [number, number, number];
    assert.ok(third - second >= 300 + 300, `tried again ${third - second} ms after`);
    pusher.close();
  });
});
