/**
 * The broker in accounts mode (decision 0080), against a real nats-server trusting the mesh's
 * operator: users are signed, never reloaded; taking one away is one account update.
 */
import { natsOf } from "@mesh/bus/internal";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { MeshBus } from "@mesh/bus";
import { AccountAuthority, jwtIssuedAt, newUserKey, readRevocationList } from "@mesh/bus/server";
import { accountsSuite, deadline, startAccountsTestServer, waitFor } from "@mesh/bus/testing";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { Broker, PrincipalKind, hostPrincipal, type DesiredPrincipal } from "./broker.js";
import { RevocationPusher } from "./revocation-pusher.js";
import { Vault } from "./vault.js";

const vault = Vault.withKey(randomBytes(32));

/** `user` (`<node>.<module>`) as a module principal that may publish to `publish`. */
const grant = (user: string, publish: string[]): DesiredPrincipal => {
  const [node = "", module = ""] = user.split(".");
  return {
    user,
    node,
    module,
    kind: PrincipalKind.module,
    permissions: { publish: { allow: publish }, subscribe: { allow: [`_INBOX.${user}.>`] } },
  };
};

const refused = (e: unknown) => isMeshError(e) && /Authorization/i.test(e.message);

describe("Broker in accounts mode", () => {
  const suite = accountsSuite("mesh-broker-acc-", { before, after });

  const open = (sub: string, supersededGraceMs?: number) =>
    Broker.open({
      dir: join(suite.dir, sub),
      vault,
      accounts: suite.server.authority,
      servers: [suite.server.url],
      ...(supersededGraceMs === undefined ? {} : { supersededGraceMs }),
    });

  const serverLog = () => readFile(suite.server.server.logPath, "utf8");

  it("issues a signed user the bus takes at once, hashes nothing, and keeps its key across a restart", async () => {
    const broker = await open("keep");
    assert.equal(await broker.ensure(hostPrincipal("n1")), true);
    assert.equal(await broker.ensure(hostPrincipal("n1")), false, "unchanged");
    assert.equal(await broker.commit(), true);
    assert.equal(broker.hashesMade, 0);
    assert.equal(suite.server.authority.updatesPushed, 0, "issuing pushes nothing");
    const credential = broker.credential("n1.host");
    assert.equal(credential.password, undefined);
    const bus = await MeshBus.connect(credential);
    await bus.close();
    const again = await open("keep");
    assert.deepEqual(again.credential("n1.host"), credential);
    assert.equal(await again.ensure(hostPrincipal("n1")), false);
    assert.doesNotMatch(await serverLog(), /Reloaded/);
  });

  it("gives moved permissions a new key, and revokes the older key after a grace", async () => {
    const broker = await open("moved", 1_500);
    const principal = (publish: string[]): DesiredPrincipal => ({
      user: "n1.m",
      node: "n1",
      module: "m",
      kind: PrincipalKind.module,
      permissions: { publish: { allow: publish }, subscribe: { allow: ["_INBOX.n1.m.>"] } },
    });
    await broker.ensure(principal(["svc.a.>"]));
    await broker.commit();
    const before = broker.credential("n1.m");
    // The process that holds it (a runtime being replaced), connected across the change.
    const holder = await MeshBus.connect(before, { say: () => undefined });
    const holderClosed = (async () => {
      for await (const s of natsOf(holder).nc.status())
        if (s.type === "disconnect") return Date.now();
      return Date.now();
    })();
    assert.equal(await broker.ensure(principal(["svc.a.>", "svc.b.>"])), true);
    await broker.commit();
    const after = broker.credential("n1.m");
    assert.notEqual(after.seed, before.seed, "a new key");
    assert.notEqual(after.jwt, before.jwt);
    // A process holding the old one (a runtime handing over) goes on until it has drained.
    const old = await MeshBus.connect(before);
    await old.close();
    assert.equal(broker.pending, false, "nothing due yet");
    const due = broker.nextDueAt();
    assert.ok(due !== undefined && due > Date.now());
    const bus = await MeshBus.connect(after);
    await bus.close();
    // Still connected and speaking during the grace: its calls in flight get their answers.
    await natsOf(holder).nc.flush();
    assert.equal(natsOf(holder).nc.isClosed(), false);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()) + 50));
    assert.equal(broker.pending, true, "the old JWT is due");
    assert.equal(await broker.commit(), true);
    assert.equal(broker.nextDueAt(), undefined);
    const closedAt = await deadline(holderClosed, 10_000, "the holder's connection closing");
    assert.ok(closedAt >= due, "closed once its JWT was revoked, not when it was superseded");
    await holder.close().catch(() => undefined);
    await assert.rejects(
      MeshBus.connect(before),
      (e: unknown) => isMeshError(e) && /Authorization/i.test(e.message),
    );
    const still = await MeshBus.connect(after);
    await still.close();
  });

  it("revokes every superseded key when due also after the controller restarted in the grace", async () => {
    const first = await open("restart", 1_500);
    await first.ensure(grant("n2.m", ["svc.a.>"]));
    await first.commit();
    const wide = first.credential("n2.m");
    await first.ensure(grant("n2.m", ["svc.a.>", "svc.c.>"]));
    await first.commit();
    const wider = first.credential("n2.m");
    await first.ensure(grant("n2.m", ["svc.b.>"])); // narrowed: no wider key outlives its grace
    await first.commit();
    const narrow = first.credential("n2.m");
    // The controller stops in the grace; the next one opens the same folder.
    const again = await open("restart", 1_500);
    const pending = again.get("n2.m")?.supersedes ?? [];
    assert.equal(pending.length, 2, "both pending keys were kept with the user");
    assert.equal(again.nextDueAt(), Math.min(...pending.map((p) => p.due)));
    await delay(Math.max(0, ...pending.map((p) => p.due - Date.now())) + 50);
    assert.equal(again.pending, true);
    assert.equal(await again.commit(), true);
    for (const old of [wide, wider]) await assert.rejects(MeshBus.connect(old), refused);
    const still = await MeshBus.connect(narrow);
    await still.close();
    const third = await open("restart", 1_500);
    assert.equal(third.nextDueAt(), undefined, "settled, and kept settled");
    assert.equal(third.get("n2.m")?.supersedes, undefined);
    assert.equal(third.pending, false);
  });

  it("re-signs within one second without waiting: each re-sign takes effect, old keys connect until their grace", async () => {
    const broker = await open("quick", 60_000);
    const credentials = [];
    for (const topic of ["a", "b", "c", "d", "e", "f"]) {
      await broker.ensure(grant("n3.m", [`svc.${topic}.>`]));
      credentials.push(broker.credential("n3.m"));
    }
    await broker.commit();
    const seconds = credentials.map((c) => jwtIssuedAt(c.jwt ?? ""));
    // Same key, each JWT had to be of a later second: 6 signs took 5 s. A new key needs none.
    assert.ok(
      seconds.some((t, i) => i > 0 && t === seconds[i - 1]),
      `two re-signs in one second (${seconds.join(", ")})`,
    );
    assert.equal(new Set(credentials.map((c) => c.seed)).size, 6, "a key per grant");
    assert.equal(broker.get("n3.m")?.supersedes?.length, 5);
    // Every one connects: the newest for good, the superseded ones until their grace is over.
    for (const c of credentials) await (await MeshBus.connect(c)).close();
    assert.equal(broker.pending, false, "nothing due in the grace");
  });

  it("revokes the current key and every pending superseded key at once when the user is taken away", async () => {
    const broker = await open("taken", 60_000);
    await broker.ensure(grant("n4.m", ["svc.a.>"]));
    await broker.commit();
    const first = broker.credential("n4.m");
    await broker.ensure(grant("n4.m", ["svc.b.>"]));
    await broker.commit();
    const second = broker.credential("n4.m");
    await broker.ensure(grant("n4.m", ["svc.c.>"]));
    await broker.commit();
    const current = broker.credential("n4.m");
    for (const c of [first, second, current]) await (await MeshBus.connect(c)).close();
    assert.equal(broker.revoke("n4.m"), true);
    await broker.commit();
    assert.equal(broker.nextDueAt(), undefined, "nothing left to revoke later");
    for (const c of [first, second, current]) await assert.rejects(MeshBus.connect(c), refused);
    const again = await open("taken", 60_000);
    assert.equal(again.get("n4.m"), undefined);
    assert.equal(again.nextDueAt(), undefined);
  });

  it("revokes a pending same-key revocation of an older controller's file up to its second only", async () => {
    // What a controller before decision 0091 left: one key, a JWT signed again in a later
    // second, and the older JWTs' revocation pending as `supersedes: {before, due}`.
    const { permissions } = grant("n5.m", ["svc.a.>"]);
    const key = newUserKey();
    const issue = () =>
      suite.server.authority.issue({ name: "n5.m", publicKey: key.publicKey, permissions });
    const older = await issue();
    while (Math.floor(Date.now() / 1000) <= jwtIssuedAt(older)) await delay(50);
    const jwt = await issue();
    await mkdir(join(suite.dir, "legacy"), { recursive: true });
    const record = { user: "n5.m", node: "n5", module: "m", kind: "module" as const };
    const user = {
      ...record,
      publicKey: key.publicKey,
      seed: vault.seal(key.seed, "n5.m"),
      jwt,
      issuedAt: jwtIssuedAt(jwt),
      permissions,
      supersedes: { before: jwtIssuedAt(jwt) - 1, due: Date.now() },
    };
    await writeFile(
      join(suite.dir, "legacy", "broker-users.json"),
      JSON.stringify({ version: 1, users: [user] }),
    );
    const broker = await open("legacy");
    assert.deepEqual(broker.get("n5.m")?.supersedes, [
      { key: key.publicKey, before: jwtIssuedAt(jwt) - 1, due: user.supersedes.due },
    ]);
    assert.equal(broker.pending, true, "due");
    await broker.commit();
    const held = { ...record, servers: [suite.server.url], seed: key.seed };
    await assert.rejects(MeshBus.connect({ ...held, jwt: older }), refused);
    await (await MeshBus.connect(broker.credential("n5.m"))).close();
    assert.equal(broker.nextDueAt(), undefined);
  });

  it("keeps a revocation in the account's list without pushing it until asked", async () => {
    const pushed = suite.server.authority.updatesPushed;
    const key = newUserKey().publicKey;
    await suite.server.authority.record({ [key]: 1 });
    assert.equal(suite.server.authority.updatesPushed, pushed, "nothing pushed");
    assert.equal(suite.server.authority.revocations[key], 1);
    const kept = await readRevocationList(suite.server.revocationsPath);
    assert.equal(kept.revocations[key], 1, "on disk when record resolves");
    // Another process (a restarted controller) finds it, and its push carries it.
    const again = await AccountAuthority.open({
      keysPath: suite.server.keysPath,
      revocationsPath: suite.server.revocationsPath,
      servers: [suite.server.url],
    });
    try {
      assert.equal(again.revocations[key], 1);
      await again.push();
      const written = JSON.parse(await readFile(suite.server.revocationsPath, "utf8")) as {
        revocations: Record<string, number>;
      };
      assert.equal(written.revocations[key], 1, "the list written whole by the update");
    } finally {
      await again.close();
    }
  });

  it("issues and revokes 1,000 principals with no reload, and a revoked credential is refused within 2 s", async () => {
    const broker = await open("thousand");
    const nodes = Array.from({ length: 1000 }, (_, i) => `n${i}`);
    const issuing = Date.now();
    for (const node of nodes) await broker.ensure(hostPrincipal(node));
    await broker.commit();
    const issuedMs = Date.now() - issuing;
    const first = await MeshBus.connect(broker.credential("n0.host"), { say: () => undefined });
    const middle = broker.credential("n500.host");
    const last = await MeshBus.connect(broker.credential("n999.host"));
    await last.close();
    const closed = (async () => {
      for await (const s of natsOf(first).nc.status()) if (s.type === "disconnect") return;
    })();
    const pushed = suite.server.authority.updatesPushed;
    const revoking = Date.now();
    for (const node of nodes) broker.revoke(`${node}.host`);
    await broker.commit();
    await deadline(closed, 2_000, "the revoked host's live connection closing");
    const refusedMs = Date.now() - revoking;
    assert.equal(suite.server.authority.updatesPushed, pushed + 1, "one account update for all");
    const kept = await Broker.open({
      dir: join(suite.dir, "thousand"),
      vault,
      accounts: suite.server.authority,
      servers: [suite.server.url],
    });
    assert.equal(kept.all().length, 0);
    await assert.rejects(
      MeshBus.connect(middle),
      (e: unknown) => isMeshError(e) && /Authorization/i.test(e.message),
    );
    await first.close().catch(() => undefined);
    assert.doesNotMatch(await serverLog(), /Reloaded/, "the server's log shows no reload");
    process.stdout.write(
      `# 1,000 principals: issued in ${issuedMs} ms, revoked and refused in ${refusedMs} ms\n`,
    );
    assert.ok(refusedMs < 2_000 * 4, `revoked in ${refusedMs} ms`);
  });

  it("prunes a join user's revocation once its JWT expired; a host's stays; both stay refused", async () => {
    await using own = await startAccountsTestServer();
    const authority = await AccountAuthority.open({
      keysPath: own.keysPath,
      revocationsPath: own.revocationsPath,
      servers: [own.url],
      pruneMarginS: 0,
    });
    try {
      const broker = await Broker.open({
        dir: join(suite.dir, "prune"),
        vault,
        accounts: authority,
        servers: [own.url],
      });
      const expiresAt = new Date(Date.now() + 3_000).toISOString();
      await broker.ensure({
        user: "join.tok",
        node: "join",
        module: "tok",
        kind: PrincipalKind.join,
        permissions: { publish: { allow: ["mesh.join"] }, subscribe: { allow: ["_INBOX.>"] } },
        expiresAt,
      });
      await broker.ensure(hostPrincipal("n1"));
      await broker.commit();
      const joinCredential = broker.credential("join.tok");
      const hostCredential = broker.credential("n1.host");
      await (await MeshBus.connect(joinCredential)).close();
      const joinKey = broker.get("join.tok")?.publicKey ?? "";
      const hostKey = broker.get("n1.host")?.publicKey ?? "";
      broker.revoke("join.tok");
      await broker.commit();
      assert.deepEqual(Object.keys(authority.revocations), [joinKey]);
      await assert.rejects(MeshBus.connect(joinCredential), /Authorization|expired/i);
      // Past the join JWT's expiry the server refuses it on its own: its revocation goes with
      // the next update, the host's revocation stays.
      // The JWT carries whole seconds (its expiry rounded up): past that second, by a margin.
      const expirySecond = Math.ceil(Date.parse(expiresAt) / 1000);
      await delay(Math.max(0, expirySecond * 1000 + 1_500 - Date.now()));
      broker.revoke("n1.host");
      await broker.commit();
      assert.deepEqual(Object.keys(authority.revocations), [hostKey]);
      const kept = JSON.parse(await readFile(own.revocationsPath, "utf8")) as {
        revocations: Record<string, number>;
      };
      assert.deepEqual(Object.keys(kept.revocations), [hostKey]);
      await assert.rejects(MeshBus.connect(joinCredential), /Authorization|expired/i);
      await assert.rejects(MeshBus.connect(hostCredential), /Authorization/i);
    } finally {
      await authority.close();
    }
  });

  it("fails a commit the bus cannot take as ACCOUNT_UPDATE_FAILED, and keeps it staged", async () => {
    const broker = await Broker.open({
      dir: join(suite.dir, "down"),
      vault,
      accounts: await AccountAuthority.open({
        keysPath: suite.server.keysPath,
        revocationsPath: join(suite.dir, "down-revocations.json"),
        servers: ["nats://127.0.0.1:1"],
        timeoutMs: 500,
      }),
      servers: [suite.server.url],
    });
    await broker.ensure(hostPrincipal("n1"));
    await broker.commit();
    broker.revoke("n1.host");
    await assert.rejects(broker.commit(), (e: unknown) =>
      isMeshError(e, ErrorCode.ACCOUNT_UPDATE_FAILED),
    );
    assert.equal(broker.pending, true);
  });

  it("with a pusher, a commit hands its revocations over and returns; the update follows, and revokes", async () => {
    const pusher = new RevocationPusher({ accounts: suite.server.authority });
    const broker = await Broker.open({
      dir: join(suite.dir, "pusher"),
      vault,
      accounts: suite.server.authority,
      servers: [suite.server.url],
      pusher,
    });
    for (const n of ["p1", "p2", "p3"]) await broker.ensure(hostPrincipal(n));
    await broker.commit();
    const [p1, p2] = [broker.credential("p1.host"), broker.credential("p2.host")];
    const before = suite.server.authority.updatesPushed;
    broker.revoke("p1.host");
    await broker.commit();
    broker.revoke("p2.host");
    await broker.commit();
    await pusher.settled();
    assert.equal(pusher.pending, false);
    assert.ok(suite.server.authority.updatesPushed - before <= 2, "at most an update a commit");
    for (const gone of [p1, p2]) {
      await assert.rejects(MeshBus.connect(gone), (e: unknown) => /Authorization/i.test(String(e)));
    }
    await (await MeshBus.connect(broker.credential("p3.host"))).close();
  });

  it("with a pusher, an update the bus cannot take waits for a retry, doubling; the commit issues its users", async () => {
    const deferred: Array<{ code: string; inMs: number }> = [];
    const accounts = await AccountAuthority.open({
      keysPath: suite.server.keysPath,
      revocationsPath: join(suite.dir, "deferred-revocations.json"),
      servers: ["nats://127.0.0.1:1"],
      timeoutMs: 500,
    });
    const pusher = new RevocationPusher({
      accounts,
      onDeferred: (error, inMs) => deferred.push({ code: error.code, inMs }),
    });
    const broker = await Broker.open({
      dir: join(suite.dir, "deferred"),
      vault,
      accounts,
      servers: [suite.server.url],
      pusher,
    });
    await broker.ensure(hostPrincipal("n1"));
    await broker.commit();
    broker.revoke("n1.host");
    await broker.ensure(hostPrincipal("n2"));
    assert.equal(await broker.commit(), true, "the commit does not wait for the bus");
    // n2 needs no update: its credential works on the real bus at once.
    await (await MeshBus.connect(broker.credential("n2.host"))).close();
    await waitFor(() => deferred.length >= 2, { what: "two updates refused", timeout: 30_000 });
    // The kit's backoff: 1 s then 2 s, each less up to a fifth at random (its jitter).
    assert.deepEqual(
      deferred.slice(0, 2).map((d) => d.code),
      [ErrorCode.ACCOUNT_UPDATE_FAILED, ErrorCode.ACCOUNT_UPDATE_FAILED],
    );
    const [first, second] = deferred.map((d) => d.inMs);
    assert.ok(first !== undefined && first >= 800 && first <= 1_000, `first retry in ${first} ms`);
    assert.ok(
      second !== undefined && second >= 1_600 && second <= 2_000,
      `second retry in ${second} ms`,
    );
    assert.equal(pusher.pending, true, "the revocation still waits");
  });
});
