/**
 * The controller in accounts mode (decision 0080) against a real nats-server trusting the mesh's
 * operator: a node joins with a signed one-time token, its modules get signed credentials held
 * to core's grants, and a module no longer wanted is revoked by an account update; nothing is
 * ever reloaded.
 */
import { natsOf } from "@mesh/bus/internal";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import {
  Bucket,
  Credential,
  ErrorCode,
  isMeshError,
  joinUser,
  mcpSealContext,
  nodeModuleKey,
  stateBucket,
} from "@mesh/protocol";
import { mcpPrincipal, operatorGrant, fingerprintOf } from "@mesh/core";
import { KvBucket, MeshBus, ensureLayout, request, requestJoin, unseal } from "@mesh/bus";
import { AccountAuthority } from "@mesh/bus/server";
import {
  credentialFor,
  accountsSuite,
  deadline,
  refusesLogin,
  startAccountsTestServer,
  waitFor,
} from "@mesh/bus/testing";
import { askJoinToken, askMcpCredential } from "./controller-api.js";
import { Controller } from "./controller.js";
import { counter, newKeys, openNeed, presenceOf, viewer, wantOf } from "./test-support.js";

/**
 * Whether the bus refuses `credential` (other errors throw). A join user's module is its token's
 * id, which starts with a digit: connected under a module name.
 */
const refusedLogin = (credential: Credential) => refusesLogin({ ...credential, module: "joining" });

describe("the controller in accounts mode", () => {
  let admin: MeshBus;
  let operator: MeshBus;
  let controller: Controller;
  const n1 = newKeys();

  // Registered before the suite's own, so that it runs before the suite stops the server.
  after(async () => {
    await controller.stop();
    await operator.close();
    await admin.close();
  });
  const suite = accountsSuite("mesh-controller-acc-", { before, after });
  before(async () => {
    admin = await MeshBus.connect(
      credentialFor(suite.server, suite.server.admin, { node: "hub", module: "controller" }),
    );
    await ensureLayout(admin);
    const operatorLogin = await suite.server.issue("hub.operator", operatorGrant({ node: "hub" }));
    operator = await MeshBus.connect(
      credentialFor(suite.server, operatorLogin, { node: "hub", module: "operator" }),
    );
    controller = await Controller.create({
      bus: admin,
      dir: suite.dir,
      accounts: suite.server.authority,
      joinRevocationsEveryMs: 2_000,
    });
    void controller.run({ signal: AbortSignal.any([]) });
    await deadline(controller.ready, 20_000, "the controller's first pass");
  });

  const put = async (bucket: string, key: string, value: unknown) => {
    const kv = await KvBucket.openWith(admin, bucket, z.unknown());
    await kv.put(key, value);
  };

  it("joins a node with a signed one-time token, which works once; its join user goes with the next batch", async () => {
    const { token, id } = await askJoinToken(operator, {});
    const joinCredential = controller.broker.credential(joinUser(id));
    const credential = await requestJoin({
      servers: [suite.server.url],
      token,
      node: "n1",
      keys: n1,
    });
    assert.equal(credential.password, undefined);
    assert.ok(credential.jwt !== undefined && credential.seed !== undefined);
    const host = await MeshBus.connect(credential);
    await host.close();
    // Used: mesh.join refuses it (or, once its batch went, the bus refuses its join user).
    await assert.rejects(
      requestJoin({ servers: [suite.server.url], token, node: "n9", keys: newKeys() }),
      (e: unknown) => isMeshError(e, ErrorCode.REFUSED),
    );
    // The spent join user is revoked by the next batch of join users' revocations (2 s here).
    await waitFor(() => refusedLogin(joinCredential), {
      what: "the spent join user refused by the bus",
      timeout: 20_000,
    });
  });

  it("gives a module a signed credential held to its grant, and revokes it when unwanted", async () => {
    await put(Bucket.presence, "n1", presenceOf("n1", n1));
    for (const m of [counter, viewer]) {
      await put(Bucket.manifests, fingerprintOf(m), m);
      await put(Bucket.wants, nodeModuleKey("n1", m.module), wantOf(m));
    }
    const composed = await KvBucket.open(admin, Bucket.composed);
    const needOf = async (id: string) => {
      for (;;) {
        const c = await composed.get("n1");
        if (c !== undefined && c.value.resources.some((r) => r.id === id)) {
          return Credential.parse(JSON.parse(openNeed(c.value, id, n1)));
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const viewerCredential = await deadline(
      needOf("viewer.need-broker"),
      20_000,
      "the viewer's credential in n1's composition",
    );
    assert.ok(viewerCredential.jwt !== undefined);
    const bus = await MeshBus.connect(viewerCredential, { say: () => undefined });
    // It may read what it declared (counter/counts), not what it did not.
    await (await KvBucket.openWith(bus, stateBucket("counter", "counts"), z.unknown())).keys();
    await assert.rejects((await KvBucket.open(bus, Bucket.secrets)).keys(), (e: unknown) =>
      isMeshError(e, ErrorCode.PERMISSION_DENIED),
    );
    const closed = (async () => {
      for await (const s of natsOf(bus).nc.status()) if (s.type === "disconnect") return;
    })();
    const unassigned = Date.now();
    await (await KvBucket.open(admin, Bucket.wants)).delete(nodeModuleKey("n1", "viewer"));
    // Taken away: revoked at once (not with the join users' batch), within 2 s of the change.
    await deadline(closed, 2_000, "the unwanted viewer's connection closing");
    process.stdout.write(`# an unassigned module: refused in ${Date.now() - unassigned} ms\n`);
    await assert.rejects(MeshBus.connect(viewerCredential), /Authorization/i);
    await bus.close().catch(() => undefined);
    assert.doesNotMatch(await readFile(suite.server.server.logPath, "utf8"), /Reloaded/);
  });
  it("issues mesh mcp --allow's credential, held by the server to those modules' tools", async () => {
    const keys = newKeys();
    const ask = { modules: ["notes", "hello"], publicKey: keys.publicKey };
    const answer = await askMcpCredential(operator, ask);
    assert.equal(answer.principal, mcpPrincipal(["hello", "notes"]));
    assert.deepEqual(answer.modules, ["hello", "notes"]);
    const opened = unseal(keys.privateKey, answer.sealed, mcpSealContext(answer.principal));
    const credential = Credential.parse(JSON.parse(opened.toString()));
    assert.deepEqual([credential.node, credential.module], ["hub", answer.principal]);
    const greet = natsOf(admin).nc.subscribe("mesh.tools.n1.hello.greet", {
      callback: (_error, m) => void m.respond(JSON.stringify({ text: "hi" })),
    });
    await natsOf(admin).nc.flush();
    try {
      await using mcp = await MeshBus.connect(credential, { say: () => undefined });
      assert.deepEqual(await request(mcp, "mesh.tools.n1.hello.greet", {}), { text: "hi" });
      await assert.rejects(request(mcp, "mesh.tools.n1.counter.add", {}), (e: unknown) =>
        isMeshError(e, ErrorCode.PERMISSION_DENIED),
      );
    } finally {
      greet.unsubscribe();
    }
    // Asked again, the same user: one principal per allow-set, not one per start.
    const again = await askMcpCredential(operator, { ...ask, modules: ["hello", "notes"] });
    const second = Credential.parse(
      JSON.parse(unseal(keys.privateKey, again.sealed, mcpSealContext(again.principal)).toString()),
    );
    assert.equal(second.user, credential.user);
    assert.equal(second.jwt, credential.jwt);
  });

  it("refuses an mcp-credential ask with no modules", async () => {
    await assert.rejects(
      askMcpCredential(operator, { modules: [], publicKey: newKeys().publicKey }),
      (e: unknown) => isMeshError(e, ErrorCode.INVALID_INPUT),
    );
  });
});

describe("the controller in accounts mode, restarted", () => {
  it("loses no pending revocation: a spent join user waiting for its batch is revoked at the next start", async () => {
    await using server = await startAccountsTestServer();
    const dir = await mkdtemp(join(tmpdir(), "mesh-controller-restart-"));
    await using admin = await MeshBus.connect(
      credentialFor(server, server.admin, { node: "hub", module: "controller" }),
    );
    await ensureLayout(admin);
    const login = await server.issue("hub.operator", operatorGrant({ node: "hub" }));
    await using operator = await MeshBus.connect(
      credentialFor(server, login, { node: "hub", module: "operator" }),
    );
    const start = async (accounts: AccountAuthority) => {
      // A batch an hour away: only a start pushes the waiting revocation.
      const c = await Controller.create({
        bus: admin,
        dir,
        accounts,
        joinRevocationsEveryMs: 3_600_000,
      });
      void c.run({ signal: AbortSignal.any([]) });
      await deadline(c.ready, 20_000, "the controller's first pass");
      return c;
    };
    const first = await start(server.authority);
    const { token, id } = await askJoinToken(operator, {});
    const joinCredential = first.broker.credential(joinUser(id));
    const joinKey = first.broker.get(joinUser(id))?.publicKey ?? "";
    await requestJoin({ servers: [server.url], token, node: "r1", keys: newKeys() });
    await waitFor(() => server.authority.revocations[joinKey] !== undefined, {
      what: "the join user's revocation kept",
    });
    assert.equal(await refusedLogin(joinCredential), false, "not pushed yet: it waits");
    await first.stop();
    // Another process: the authority reads the kept list again.
    const accounts = await AccountAuthority.open({
      keysPath: server.keysPath,
      revocationsPath: server.revocationsPath,
      servers: [server.url],
    });
    const second = await start(accounts);
    try {
      await waitFor(() => refusedLogin(joinCredential), {
        what: "the join user refused after the restart",
        timeout: 20_000,
      });
    } finally {
      await second.stop();
      await accounts.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
