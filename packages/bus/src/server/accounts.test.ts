import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { decode } from "@nats-io/jwt";
import { ErrorCode, isMeshError, type Permissions } from "@mesh/protocol";
import { MeshBus, natsOf } from "../mesh-bus.js";
import { startAccountsTestServer, type AccountsTestServer } from "../testing/accounts-harness.js";
import { credentialFor, deadline } from "../testing/harness.js";
import { userPermissionClaims } from "./accounts.js";
import { EmbeddedServer, ServerFiles } from "./embedded-server.js";
import { reloadServerUsers } from "./reload-users.js";
import { renderServerConfig } from "./server-config.js";

const as = (module: string) => ({ node: "n1", module });

describe("userPermissionClaims", () => {
  it("carries the allow and deny lists as they are, and nothing allowed as deny >", () => {
    const claims = userPermissionClaims({
      publish: { allow: ["a.>", "b"], deny: ["a.secret"] },
      subscribe: {},
      allowResponses: { max: 5, expiresMs: 2_000 },
    });
    assert.deepEqual(claims.pub, { allow: ["a.>", "b"], deny: ["a.secret"] });
    assert.deepEqual(claims.sub, { deny: [">"] });
    assert.deepEqual(claims.resp, { max: 5, ttl: 2_000_000_000 });
    assert.deepEqual(userPermissionClaims({ publish: {}, subscribe: {} }).resp, undefined);
    const once = userPermissionClaims({ publish: {}, subscribe: {}, allowResponses: true });
    assert.deepEqual(once.resp, { max: 1, ttl: 0 });
  });
});

describe("accounts mode on a real nats-server", () => {
  let server: AccountsTestServer;
  before(async () => {
    server = await startAccountsTestServer();
  });
  after(() => server.stop());

  it("renders no users list, and refuses to reload one", async () => {
    const config = await readFile(server.server.configPath, "utf8");
    assert.match(config, /resolver \{\n {2}type: full/);
    assert.doesNotMatch(config, /authorization/);
    await assert.rejects(
      reloadServerUsers({ dir: server.server.dir, users: [] }),
      (e: unknown) => isMeshError(e, ErrorCode.SERVER_RELOAD_FAILED) && /accounts/.test(e.message),
    );
    assert.throws(() =>
      renderServerConfig({
        serverVersion: "2.9.10",
        serverName: "x",
        port: 0,
        storeDir: "/tmp/x",
        users: [],
        accounts: { operatorJwt: "x", systemAccount: "A", preload: {}, resolverDir: "/tmp/j" },
      }),
    );
  });

  it("lets a signed user use JetStream, and holds a narrower user to its grant", async () => {
    const admin = await MeshBus.connect(credentialFor(server, server.admin, as("admin")));
    const kv = await natsOf(admin).kvm.create("cfg");
    await kv.put("a", "1");
    const reader: Permissions = {
      publish: { allow: ["$JS.API.STREAM.MSG.GET.KV_cfg"] },
      subscribe: { allow: ["_INBOX.n1.reader.>"] },
    };
    const login = await server.issue("n1.reader", reader);
    const bus = await MeshBus.connect(credentialFor(server, login, as("reader")));
    const mine = await natsOf(bus).kvm.open("cfg");
    assert.equal((await mine.get("a"))?.string(), "1");
    await assert.rejects(mine.put("a", "2"), /Permissions Violation/);
    // A service user: no publish allowed, but it may answer what it is asked.
    const service = await server.issue("n1.svc", {
      publish: {},
      subscribe: { allow: ["svc.n1.>"] },
      allowResponses: true,
    });
    const svc = await MeshBus.connect(credentialFor(server, service, as("svc")));
    const sub = natsOf(svc).nc.subscribe("svc.n1.echo", {
      callback: (_e, m) => {
        m.respond(m.data);
      },
    });
    await natsOf(svc).nc.flush();
    const reply = await natsOf(admin).nc.request("svc.n1.echo", "hi", { timeout: 5_000 });
    assert.equal(reply.string(), "hi");
    sub.unsubscribe();
    await Promise.all([svc.close(), bus.close(), admin.close()]);
  });

  it("revokes by an account update: the live connection closes, a new login is refused, nothing reloads", async () => {
    const login = await server.issue("n1.gone", {
      publish: { allow: ["x.>"] },
      subscribe: { allow: ["_INBOX.n1.gone.>"] },
    });
    const bus = await MeshBus.connect(credentialFor(server, login, as("gone")), {
      say: () => undefined,
    });
    const kept = await server.issue("n1.kept", { publish: { allow: [">"] }, subscribe: {} });
    const keptBus = await MeshBus.connect(credentialFor(server, kept, as("kept")));
    const disconnected = (async () => {
      for await (const s of natsOf(bus).nc.status()) if (s.type === "disconnect") return;
    })();
    const started = Date.now();
    await server.authority.revoke({ [login.publicKey]: Math.floor(Date.now() / 1000) });
    await deadline(disconnected, 2_000, "the revoked user's connection closing");
    assert.ok(Date.now() - started < 2_000 * 4);
    await assert.rejects(
      MeshBus.connect(credentialFor(server, login, as("gone"))),
      (e: unknown) => isMeshError(e) && /Authorization|revoked/i.test(e.message),
    );
    natsOf(keptBus).nc.publish("x.still");
    await natsOf(keptBus).nc.flush();
    const log = await readFile(server.server.logPath, "utf8");
    assert.doesNotMatch(log, /Reloaded/);
    await bus.close().catch(() => undefined);
    await keptBus.close();
  });

  it("keeps a revocation across a restart of the server", async () => {
    const login = await server.issue("n1.old", { publish: { allow: [">"] }, subscribe: {} });
    await server.authority.revoke({ [login.publicKey]: Math.floor(Date.now() / 1000) });
    const dir = server.server.dir;
    const port = server.port;
    await server.server.stop();
    // Started again with the account as first made (no revocations): the resolver keeps the
    // newer JWT the update left in its folder.
    const config = await readFile(`${dir}/${ServerFiles.config}`, "utf8");
    const preload = /resolver_preload \{\n((?:.*\n)*?)\}/.exec(config)?.[1] ?? "";
    const accounts = Object.fromEntries(
      preload
        .trim()
        .split("\n")
        .map((l) => l.trim().split(": "))
        .map(([k, v]) => [k, JSON.parse(v ?? "") as string]),
    ) as Record<string, string>;
    const operatorJwt = JSON.parse(/operator: (".*")/.exec(config)?.[1] ?? "") as string;
    const systemAccount = decode(operatorJwt).nats as { system_account: string };
    const again = await EmbeddedServer.start({
      dir,
      port,
      accounts: { operatorJwt, systemAccount: systemAccount.system_account, preload: accounts },
      serverName: "mesh-test",
      ref: false,
    });
    try {
      await assert.rejects(MeshBus.connect(credentialFor(again, login, as("old"))));
      const admin = await MeshBus.connect(credentialFor(again, server.admin, as("admin")));
      assert.equal((await (await natsOf(admin).kvm.open("cfg")).get("a"))?.string(), "1");
      await admin.close();
    } finally {
      await again.stop();
    }
  });
});
