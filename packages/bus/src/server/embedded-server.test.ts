import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { readdir, readFile } from "node:fs/promises";
import { createServer, connect as netConnect } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, type NatsConnection, type Status } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { ErrorCode, inboxPrefix, isMeshError } from "@mesh/protocol";
import { deadline } from "../testing/harness.js";
import { EmbeddedServer, ServerFiles } from "./embedded-server.js";
import { findServer, type NatsServerBinary } from "./find-server.js";
import { hashPassword, type ServerUser } from "./server-config.js";
import { ADMIN, TestServers, connectAs } from "./test-servers.js";

const WAIT_MS = 5_000;

let binary: NatsServerBinary;
const admin = ADMIN;
let servers: TestServers;
let adminUser: ServerUser;

before(async () => {
  binary = await findServer();
  servers = await TestServers.create("mesh-embedded-");
  adminUser = servers.adminUser;
});

// Any server a failed test left running is stopped here, by its pid.
after(() => servers?.stopAll());

async function start(
  name: string,
  options: { port?: number; users?: ServerUser[] } = {},
): Promise<EmbeddedServer> {
  const server = await EmbeddedServer.start({
    dir: join(servers.root, name),
    port: options.port ?? 0,
    users: options.users ?? [adminUser],
    binary,
    startTimeoutMs: 15_000,
  });
  return servers.track(server);
}

/** Whether a process with this pid exists (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, "ESRCH");
    return false;
  }
}

/** Pids of nats-server processes whose command line names `configPath` (Linux /proc). */
async function serversOn(configPath: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.split("\0").includes(configPath)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** Collects a connection's status events until it closes. */
function recordStatus(nc: NatsConnection): Status[] {
  const events: Status[] = [];
  void (async () => {
    for await (const status of nc.status()) events.push(status);
  })();
  return events;
}

describe("EmbeddedServer lifecycle", () => {
  it("starts, answers a client with JetStream, and says where it is", async () => {
    const server = await start("basic");
    assert.match(server.url, /^nats:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(server.port > 0);
    assert.equal(server.version, binary.version);
    assert.equal(server.storeDir, join(servers.root, "basic", ServerFiles.store));
    assert.ok(alive(server.pid));
    assert.equal(server.state, "running");
    const nc = await connectAs(server, admin);
    try {
      const kv = await new Kvm(nc).create("probe");
      await kv.put("k", "v");
      assert.equal((await kv.get("k"))?.string(), "v");
    } finally {
      await nc.close();
    }
    const log = await readFile(server.logPath, "utf8");
    assert.match(log, /Server is ready/);
    await server.stop();
  });

  it("closes a client that answers no ping within seconds, as one beyond a partition (decision 0182)", async () => {
    const server = await start("silent-client");
    // A client that logs in, then reads nothing and answers nothing, its socket left open.
    const socket = netConnect(server.port, "127.0.0.1");
    const closed = new Promise<number>((resolve) =>
      socket.once("close", () => resolve(Date.now())),
    );
    socket.on("error", () => undefined);
    await new Promise<void>((resolve) => socket.once("data", () => resolve()));
    const login = { verbose: false, pedantic: false, user: admin.user, pass: admin.password };
    socket.write(`CONNECT ${JSON.stringify(login)}\r\nPING\r\n`);
    await new Promise<void>((resolve) => socket.once("data", () => resolve()));
    const silentSince = Date.now();
    socket.on("data", () => undefined); // read, never answered
    // Pinged every 2 s and closed after three unanswered: ~8–10 s; the server's default (2 minutes
    // and 2) kept it 4–6 minutes.
    const closedAt = await deadline(closed, 20_000, "the server to close the silent client");
    const took = closedAt - silentSince;
    process.stdout.write(`# the server closed a silent client after ${took} ms\n`);
    socket.destroy();
    await server.stop();
  });

  it("keeps JetStream data in its folder: a second start finds a bucket made in the first", async () => {
    const first = await start("persist");
    let nc = await connectAs(first, admin);
    await (await new Kvm(nc).create("kept")).put("greeting", "hello");
    await nc.close();
    await first.stop();

    const second = await start("persist");
    nc = await connectAs(second, admin);
    try {
      const kv = await new Kvm(nc).open("kept");
      assert.equal((await kv.get("greeting"))?.string(), "hello");
    } finally {
      await nc.close();
      await second.stop();
    }
  });

  it("refuses a second server on a folder whose server runs (ROOT_IN_USE)", async () => {
    const server = await start("in-use");
    await assert.rejects(start("in-use"), (error: unknown) =>
      isMeshError(error, ErrorCode.ROOT_IN_USE),
    );
    await server.stop();
  });

  it("stop leaves no process, and a second stop and dispose are harmless", async () => {
    const server = await start("stop");
    const { pid } = server;
    assert.ok(alive(pid));
    await server.stop();
    assert.equal(alive(pid), false);
    assert.equal(server.state, "stopped");
    await server.stop();
    await server[Symbol.asyncDispose]();
    assert.deepEqual(await serversOn(server.configPath), []);
  });

  it("stop kills a server that ignores the grace period", async () => {
    const server = await start("kill");
    process.kill(server.pid, "SIGSTOP"); // a stopped process cannot act on SIGTERM
    await server.stop({ graceMs: 200 });
    assert.equal(alive(server.pid), false);
    assert.equal((await server.exited).signal, "SIGKILL");
  });

  it("stop is harmless after Ctrl-C reached the server first", async () => {
    const server = await start("ctrl-c");
    process.kill(server.pid, "SIGINT"); // what the terminal sends to the whole process group
    await deadline(server.exited, WAIT_MS, "the server exiting on SIGINT");
    assert.equal(server.state, "failed");
    await server.stop();
    assert.equal(alive(server.pid), false);
  });

  it("a server that exits while starting gives SERVER_START_FAILED with its last lines", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen({ host: "127.0.0.1", port: 0 }, resolve));
    const address = taken.address();
    assert.ok(address !== null && typeof address === "object");
    try {
      await assert.rejects(start("port-taken", { port: address.port }), (error: unknown) => {
        assert.ok(isMeshError(error, ErrorCode.SERVER_START_FAILED));
        assert.match(error.message, /address already in use/);
        return true;
      });
      assert.deepEqual(await serversOn(join(servers.root, "port-taken", ServerFiles.config)), []);
    } finally {
      taken.close();
    }
  });

  it("an aborted start leaves no process", async () => {
    const controller = new AbortController();
    const starting = EmbeddedServer.start({
      dir: join(servers.root, "aborted"),
      port: 0,
      users: [adminUser],
      binary,
      signal: controller.signal,
    });
    // Abort once the child runs but before it can be ready: on the next turn of the loop.
    setImmediate(() => controller.abort());
    await assert.rejects(starting, (error: unknown) => isMeshError(error, ErrorCode.ABORTED));
    assert.deepEqual(await serversOn(join(servers.root, "aborted", ServerFiles.config)), []);
  });
});

describe("EmbeddedServer with TLS", () => {
  it("serves TLS with the certificate it is given", async (t) => {
    const dir = join(servers.root, "tls");
    const cert = join(servers.root, "tls-cert.pem");
    const key = join(servers.root, "tls-key.pem");
    try {
      await promisify(execFile)("openssl", [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
        ...["-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=mesh-test"],
        ...["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
      ]);
    } catch {
      t.skip("openssl is not available to make a certificate");
      return;
    }
    const server = await EmbeddedServer.start({
      dir,
      port: 0,
      users: [adminUser],
      binary,
      tls: { certFile: cert, keyFile: key },
    });
    servers.track(server);
    const nc = await connect({
      servers: server.url,
      user: admin.user,
      pass: admin.password,
      tls: { ca: await readFile(cert, "utf8") },
    });
    assert.equal(nc.info?.tls_required, true);
    await nc.close();
    await assert.rejects(
      connect({ servers: server.url, user: admin.user, pass: admin.password, timeout: 2_000 }),
      /self-signed certificate/,
    );
    await server.stop();
  });
});

describe("EmbeddedServer.setUsers", () => {
  let server: EmbeddedServer;
  const alpha = { user: "alpha", password: "alpha-pw" };
  const beta = { user: "beta", password: "beta-pw" };
  let alphaUser: ServerUser;
  let betaUser: ServerUser;

  before(async () => {
    alphaUser = {
      user: alpha.user,
      passwordHash: await hashPassword(alpha.password),
      permissions: {
        publish: { allow: ["events.>"] },
        subscribe: { allow: ["events.>", `${inboxPrefix("n1", "alpha")}.>`] },
      },
    };
    betaUser = {
      user: beta.user,
      passwordHash: await hashPassword(beta.password),
      permissions: {
        publish: { allow: ["events.beta"] },
        subscribe: { allow: [`${inboxPrefix("n1", "beta")}.>`] },
      },
    };
    server = await start("reload", { users: [adminUser, alphaUser] });
  });
  after(() => server.stop());

  it("adds a user without disturbing a connected, unaffected client", async (t) => {
    const nc = await connectAs(server, alpha, { inboxPrefix: inboxPrefix("n1", "alpha") });
    const events = recordStatus(nc);
    const sub = nc.subscribe("events.x");
    const received = (async () => {
      for await (const msg of sub) return msg.string();
      return undefined;
    })();
    await nc.flush();
    await assert.rejects(
      connectAs(server, beta),
      (error: Error) => error.name === "AuthorizationError",
    );

    const began = performance.now();
    await server.setUsers([adminUser, alphaUser, betaUser]);
    t.diagnostic(`reload confirmed in ${(performance.now() - began).toFixed(1)} ms`);

    const ncBeta = await connectAs(server, beta, { inboxPrefix: inboxPrefix("n1", "beta") });
    await ncBeta.close();
    const ncAdmin = await connectAs(server, admin);
    ncAdmin.publish("events.x", "after reload");
    await ncAdmin.flush();
    assert.equal(
      await deadline(received, WAIT_MS, "alpha's subscription receiving after the reload"),
      "after reload",
    );
    await nc.flush();
    assert.deepEqual(
      events.filter((e) => e.type === "disconnect" || e.type === "reconnect" || e.type === "error"),
      [],
    );
    assert.equal(nc.isClosed(), false);
    await ncAdmin.close();
    await nc.close();
  });

  it("disconnects a user that was removed", async () => {
    const ncBeta = await connectAs(server, beta, {
      reconnectTimeWait: 100,
      maxReconnectAttempts: 5,
    });
    const events = recordStatus(ncBeta);
    await server.setUsers([adminUser, alphaUser]);
    const closed = await deadline(
      ncBeta.closed(),
      WAIT_MS,
      "the removed user's connection closing",
    );
    assert.equal(closed?.name, "AuthorizationError");
    assert.ok(events.some((e) => e.type === "disconnect"));
    await assert.rejects(
      connectAs(server, beta),
      (error: Error) => error.name === "AuthorizationError",
    );
  });

  it("a list the server refuses gives SERVER_RELOAD_FAILED and the old list stays in force", async () => {
    const before = await readFile(server.configPath, "utf8");
    const broken: ServerUser = {
      ...betaUser,
      permissions: { publish: { allow: ["events..double-dot"] }, subscribe: {} },
    };
    await assert.rejects(server.setUsers([adminUser, alphaUser, broken]), (error: unknown) => {
      assert.ok(isMeshError(error, ErrorCode.SERVER_RELOAD_FAILED));
      assert.match(error.message, /not a valid subject/);
      return true;
    });
    // The server kept the old users, and the file on disk is what it runs.
    assert.equal(await readFile(server.configPath, "utf8"), before);
    await (await connectAs(server, alpha)).close();
    await assert.rejects(
      connectAs(server, beta),
      (error: Error) => error.name === "AuthorizationError",
    );
    // A good list afterwards still applies.
    await server.setUsers([adminUser, alphaUser, betaUser]);
    await (await connectAs(server, beta)).close();
  });

  it("refuses a list it cannot write before touching the server (INVALID_VALUE)", async () => {
    const before = await readFile(server.configPath, "utf8");
    await assert.rejects(server.setUsers([]), (error: unknown) =>
      isMeshError(error, ErrorCode.INVALID_VALUE),
    );
    assert.equal(await readFile(server.configPath, "utf8"), before);
  });

  it("applies concurrent calls one after the other, the last one winning", async () => {
    await Promise.all([
      server.setUsers([adminUser, alphaUser]),
      server.setUsers([adminUser, betaUser]),
      server.setUsers([adminUser, alphaUser, betaUser]),
    ]);
    await (await connectAs(server, alpha)).close();
    await (await connectAs(server, beta)).close();
  });
});
