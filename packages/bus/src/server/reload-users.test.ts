import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { deadline, startTestServer, type TestServer } from "../testing/harness.js";
import { FULL_PERMISSIONS, hashPassword, type ServerUser } from "./server-config.js";
import { reloadServerUsers, serverFolderSink } from "./reload-users.js";

// The bus is a child of `mesh up`; the controller is another process and reloads it through the
// server's folder alone. These tests reload a running server only through its folder.
describe("reloadServerUsers", () => {
  let server: TestServer;
  let admin: ServerUser;
  before(async () => {
    server = await startTestServer();
    admin = {
      user: server.admin.user,
      passwordHash: await hashPassword(server.admin.password),
      permissions: FULL_PERMISSIONS,
    };
  });
  after(() => server.stop());

  const connectAs = (user: string, pass: string): Promise<NatsConnection> =>
    connect({ servers: server.url, user, pass, reconnect: false });

  it("adds a user through the folder: same server pid, and a live subscription keeps receiving", async () => {
    const watcher = await connectAs(server.admin.user, server.admin.password);
    const sub = watcher.subscribe("probe.>");
    const received: string[] = [];
    let gotSecond: () => void = () => undefined;
    const second = new Promise<void>((resolve) => (gotSecond = resolve));
    void (async () => {
      for await (const m of sub) {
        received.push(m.subject);
        if (m.subject === "probe.after") gotSecond();
      }
    })();
    watcher.publish("probe.before");
    await watcher.flush();

    const ada: ServerUser = {
      user: "n1.ada",
      passwordHash: await hashPassword("ada-password"),
      permissions: { publish: { allow: ["probe.>"] }, subscribe: { allow: ["_INBOX.>"] } },
    };
    await reloadServerUsers({ dir: server.dir, users: [admin, ada] });

    const joined = await connectAs("n1.ada", "ada-password");
    joined.publish("probe.after");
    await joined.flush();
    await deadline(second, 5_000, "the unaffected subscriber receiving after the reload");
    assert.deepEqual(received, ["probe.before", "probe.after"]);
    assert.equal(server.server.pid, server.pid, "the server was reloaded, not restarted");
    assert.doesNotThrow(() => process.kill(server.pid, 0), "the same process still runs");
    await joined.close();
    await watcher.close();
  });

  it("removes a user through a UsersSink: it can no longer connect", async () => {
    const sink = serverFolderSink(server.dir);
    await sink.setUsers([admin]);
    await assert.rejects(connectAs("n1.ada", "ada-password"), /Authorization/i);
  });

  it("waits for its own verdict when the reload before it timed out (a late Reloaded is not its own)", async () => {
    // A reload re-checks the bcrypt password of every connected client (~60 ms each): with 40
    // connected it takes seconds, so the first reload below gives up long before its verdict.
    const load: ServerUser = {
      user: "n1.load",
      passwordHash: await hashPassword("load-password"),
      permissions: { publish: { allow: ["probe.>"] }, subscribe: { allow: ["_INBOX.>"] } },
    };
    const late = (user: string): Promise<ServerUser> =>
      hashPassword(`${user}-password`).then((passwordHash) => ({
        user,
        passwordHash,
        permissions: load.permissions,
      }));
    const [first, second] = [await late("n1.first"), await late("n1.second")];
    await reloadServerUsers({ dir: server.dir, users: [admin, load] });
    const clients: NatsConnection[] = [];
    try {
      for (let i = 0; i < 40; i++) clients.push(await connectAs("n1.load", "load-password"));
      const log = join(server.dir, "nats-server.log");
      const before = (await readFile(log)).length;
      await assert.rejects(
        reloadServerUsers({ dir: server.dir, users: [admin, load, first], timeoutMs: 100 }),
        (error) => isMeshError(error, ErrorCode.SERVER_RELOAD_FAILED),
      );
      await reloadServerUsers({
        dir: server.dir,
        users: [admin, load, first, second],
        timeoutMs: 120_000,
      });
      // It resolved on its own verdict, the second after the one it waited for, not on the first.
      const verdicts = (await readFile(log)).subarray(before).toString("utf8");
      assert.equal(verdicts.match(/Reloaded server configuration/g)?.length, 2, verdicts);
      const joined = await connectAs("n1.second", "n1.second-password");
      await joined.close();
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it("refuses a folder with no running server, saying so", async () => {
    const empty = await mkdtemp(join(tmpdir(), "mesh-no-bus-"));
    try {
      await assert.rejects(reloadServerUsers({ dir: empty, users: [admin] }), (error) =>
        isMeshError(error, ErrorCode.SERVER_RELOAD_FAILED),
      );
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
