import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import { ErrorCode, MeshError, type Credential } from "@mesh/protocol";
import { KvBucket, type WatchEvent } from "./kv-bucket.js";
import type { BusEvent } from "./connection-state.js";
import { MeshBus } from "./mesh-bus.js";
import { EmbeddedServer } from "./server/embedded-server.js";
import { FULL_PERMISSIONS, hashPassword, type ServerUser } from "./server/server-config.js";
import { ADMIN, TestServers } from "./server/test-servers.js";
import { PROMPT_MS, deadline, freePort } from "./testing/harness.js";
import { natsOf } from "./mesh-bus.js";

// The client waits 2 s between reconnect attempts (its default); a restart takes one or two.
const RECONNECT_MS = 10_000;

const admin = ADMIN;
let servers: TestServers;

before(async () => {
  servers = await TestServers.create("mesh-events-");
});

after(() => servers?.stopAll());

async function start(dir: string, port: number): Promise<EmbeddedServer> {
  const users = [servers.adminUser];
  return servers.track(
    await EmbeddedServer.start({ dir: join(servers.root, dir), port, users, ref: false }),
  );
}

/**
 * A server on a free port (its files under `dir`) and a bus connected to it, for a test that
 * stops the server and starts it again on that port; disposing of it closes both.
 */
async function restartable(dir: string) {
  const port = await freePort();
  let server = await start(dir, port);
  const bus = await MeshBus.connect(credential(port));
  return {
    bus,
    stop: () => server.stop(),
    async start(): Promise<void> {
      server = await start(dir, port);
    },
    async [Symbol.asyncDispose](): Promise<void> {
      await bus.close();
      await server.stop();
    },
  };
}

function credential(port: number): Credential {
  return {
    servers: [`nats://127.0.0.1:${port}`],
    user: admin.user,
    password: admin.password,
    node: "n0",
    module: "controller",
  };
}

async function next<T>(iterator: AsyncIterator<T>, ms: number, what: string): Promise<T> {
  const result = await deadline(iterator.next(), ms, what);
  assert.equal(result.done, false, `the iteration ended while waiting for ${what}`);
  return result.value;
}

/** The next event that is not an `error` (the server may say why it closed the connection). */
async function nextChange(events: AsyncIterator<BusEvent>, ms: number, what: string) {
  for (;;) {
    const event = await next(events, ms, what);
    if (event.type !== "error") return event.type;
  }
}

describe("MeshBus.events", () => {
  it("reports disconnected then reconnected across a restart, and a watch keeps delivering", async () => {
    await using server = await restartable("restart");
    const { bus } = server;
    await natsOf(bus).kvm.create("restart_watch");
    const bucket = await KvBucket.openWith(bus, "restart_watch", z.number());
    await bucket.put("before", 1);
    const watch = bucket.watch();
    const seen = async (what: string): Promise<WatchEvent<number>> =>
      next(watch, RECONNECT_MS, what);
    assert.equal((await seen("the standing value")).type, "put");
    assert.equal((await seen("the marker")).type, "current");

    // Taken before the restart: the events of the restart must all be in it.
    const events = bus.events();
    await server.stop();
    assert.equal(await nextChange(events, PROMPT_MS, "the disconnect"), "disconnected");
    await server.start();
    assert.equal(await nextChange(events, RECONNECT_MS, "the reconnect"), "reconnected");

    await bucket.put("after", 2);
    const after = await seen("the change after the reconnect");
    assert.equal(after.type, "put");
    assert.equal(after.type === "put" ? after.key : undefined, "after");
    await watch.return(undefined);
    await events.return(undefined);
  });
});

describe("MeshBus.connection", () => {
  it("is one value from the connect on: away across a restart, back with its outage, closed at close", async () => {
    await using server = await restartable("state");
    const { bus } = server;
    assert.equal(bus.connection.status, "connected");
    assert.equal(bus.connection.returns, 0);
    const told: string[] = [];
    let back: (() => void) | undefined;
    bus.onConnection((now, before) => {
      told.push(`${before.status}->${now.status}`);
      if (now.status === "connected") back?.();
    });
    const returned = new Promise<void>((resolve) => (back = resolve));
    // Nothing listened before the outage but the bus itself: the value knows it all the same.
    await server.stop();
    const away = new Promise<void>((resolve) => {
      if (bus.connection.status === "away") resolve();
      const off = bus.onConnection((now) => {
        if (now.status !== "away") return;
        off();
        resolve();
      });
    });
    await deadline(away, PROMPT_MS, "the state to say away");
    const lost = bus.connection.since;
    await server.start();
    await deadline(returned, RECONNECT_MS, "the state to say connected again");
    assert.equal(bus.connection.returns, 1);
    assert.equal(bus.connection.lastOutage?.lost, lost);
    assert.equal(bus.connection.lastOutage?.back, bus.connection.since);
    await bus.close();
    assert.equal(bus.connection.status, "closed");
    assert.deepEqual(told, ["connected->away", "away->connected", "connected->closed"]);
  });
});

describe("MeshBus.connect", () => {
  it("fails promptly with CONNECT_FAILED when nothing answers", async () => {
    const port = await freePort();
    await assert.rejects(
      deadline(MeshBus.connect(credential(port)), PROMPT_MS, "the failure"),
      (error: unknown) => error instanceof MeshError && error.code === ErrorCode.CONNECT_FAILED,
    );
  });

  it("with waitForBus, connects once the bus comes up", async () => {
    const port = await freePort();
    const connecting = MeshBus.connect(credential(port), { waitForBus: true });
    const server = await start("late", port);
    const bus = await deadline(connecting, RECONNECT_MS, "the connection");
    try {
      await natsOf(bus).kvm.create("late_bucket");
    } finally {
      await bus.close();
      await server.stop();
    }
  });

  it("with waitForBus, stops trying with ABORTED when the signal aborts", async () => {
    const port = await freePort();
    const controller = new AbortController();
    const connecting = MeshBus.connect(credential(port), {
      waitForBus: true,
      signal: controller.signal,
    });
    controller.abort();
    await assert.rejects(
      deadline(connecting, PROMPT_MS, "the abort"),
      (error: unknown) => error instanceof MeshError && error.code === ErrorCode.ABORTED,
    );
  });
});

describe("a refused login is retried, and said", () => {
  const late = { user: "late", password: "late-pw" };
  const lateCredential = (port: number): Credential => ({
    ...credential(port),
    user: late.user,
    password: late.password,
    module: "late",
  });
  const withLate = async (): Promise<ServerUser[]> => [
    servers.adminUser,
    {
      user: late.user,
      passwordHash: await hashPassword(late.password),
      permissions: FULL_PERMISSIONS,
    },
  ];

  it("reconnects after a restarted bus refused the login until it knew the user again", async () => {
    const port = await freePort();
    const dir = join(servers.root, "refused-restart");
    let server = await EmbeddedServer.start({ dir, port, users: await withLate(), ref: false });
    servers.track(server);
    const said: string[] = [];
    const bus = await MeshBus.connect(lateCredential(port), { say: (line) => said.push(line) });
    try {
      const events = bus.events();
      await server.stop();
      // Restarted without the user: every reconnect attempt is refused. The client's default
      // gives up for good after two refusals; the mesh's connection must not.
      server = await EmbeddedServer.start({ dir, port, users: [servers.adminUser], ref: false });
      servers.track(server);
      await deadline(
        (async () => {
          while (!said.some((line) => line.includes("refused the login of n0.late"))) {
            await next(events, RECONNECT_MS, "a refusal");
          }
        })(),
        RECONNECT_MS * 2,
        "the refusal to be said",
      );
      // Three more reconnect rounds refused (the client's default stops at two).
      let refusals = 0;
      while (refusals < 3) {
        const event = await next(events, RECONNECT_MS, "more refusals");
        if (event.type === "error" && event.error.code === ErrorCode.REFUSED) refusals += 1;
        else if (event.type === "error" && /uthoriz/.test(event.error.message)) refusals += 1;
      }
      assert.equal(bus.isClosed, false, "the connection gave up");
      await server.setUsers(await withLate());
      // Each refused round may also say disconnected; what matters is that it comes back.
      while ((await nextChange(events, RECONNECT_MS * 2, "the reconnect")) !== "reconnected");
      await natsOf(bus).kvm.create("refused_then_known");
      assert.ok(
        said.some((line) => line.includes("accepts n0.late again")),
        said.join("\n"),
      );
      await events.return(undefined);
    } finally {
      await bus.close();
      await server.stop();
    }
  });

  it("with waitForBus, keeps trying a refused login until the bus knows the user", async () => {
    const port = await freePort();
    const server = await EmbeddedServer.start({
      dir: join(servers.root, "refused-first"),
      port,
      users: [servers.adminUser],
      ref: false,
    });
    servers.track(server);
    const said: string[] = [];
    const connecting = MeshBus.connect(lateCredential(port), {
      waitForBus: true,
      say: (line) => said.push(line),
    });
    try {
      await deadline(
        (async () => {
          while (said.length === 0) await new Promise((r) => setTimeout(r, 20));
        })(),
        RECONNECT_MS,
        "the refusal to be said",
      );
      assert.match(said[0] ?? "", /refused the login/);
      await server.setUsers(await withLate());
      const bus = await deadline(connecting, RECONNECT_MS, "the connection");
      await bus.close();
    } finally {
      await server.stop();
    }
  });
});
