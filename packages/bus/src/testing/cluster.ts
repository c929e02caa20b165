/**
 * A real three-server JetStream cluster for tests (docs/nats.md §5): each server a child
 * process on its own client and route ports and its own store, routes between all of them, the
 * same users (or the same operator and accounts) on each. A test kills a server with SIGKILL
 * and starts it again on the same folder.
 */
import { once } from "@mesh/kit";
import { reapWithMe } from "./reaper.js";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Credential } from "@mesh/protocol";
import { EmbeddedServer } from "../server/embedded-server.js";
import type { ServerAccounts } from "../server/accounts.js";
import type { NatsServerBinary } from "../server/find-server.js";
import { ensureLayout } from "../layout-setup.js";
import { MeshBus } from "../mesh-bus.js";
import type { ServerTls, ServerUser } from "../server/server-config.js";
import { freePort, hashUsers, type TestUser } from "./harness.js";
import { waitFor } from "./wait-for.js";

export interface TestClusterOptions {
  /** How many servers; 3 by default. */
  readonly size?: number;
  readonly users?: readonly TestUser[];
  readonly binary?: NatsServerBinary;
  /** Clients and routes over TLS with this certificate (its own authority for the routes). */
  readonly tls?: ServerTls;
  /**
   * Accounts mode (decision 0080): every server trusts this operator and keeps the accounts in
   * its full resolver; `users` and `admin` are then not used (sign users with the account keys).
   */
  readonly accounts?: ServerAccounts;
  /**
   * Each server on a network stack of its own (one per server, in order): run in the namespace,
   * listening on the address, on the standard ports; a test cuts one off by its link (as
   * packages/cli/src/testing/fleet-net.ts makes them) and the others go on without it.
   */
  readonly network?: ReadonlyArray<{ readonly netns: string; readonly address: string }>;
}

export interface TestCluster extends AsyncDisposable {
  /** Every server's client url, in order. */
  readonly urls: readonly string[];
  readonly admin: { readonly user: string; readonly password: string };
  /** The server running now at `index` (a new one after `start(index)`). */
  server(index: number): EmbeddedServer;
  /** A credential naming every server of the cluster. */
  credential(
    who: { readonly user: string; readonly password: string },
    as: { readonly node: string; readonly module: string },
  ): Credential;
  /** kill -9 of one server; resolves once it is gone. */
  kill(index: number): Promise<void>;
  /** Starts a killed server again on its folder, ports and store. */
  start(index: number): Promise<void>;
  /** Stops every server and removes the folder; calling it again is harmless. */
  stop(): Promise<void>;
}

export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const size = options.size ?? 3;
  const admin = { user: "admin", password: randomBytes(18).toString("base64url") };
  const users = await hashUsers(admin, options.users ?? [], undefined);
  const dir = await mkdtemp(join(tmpdir(), "mesh-cluster-"));
  const ports: number[] = [];
  const routePorts: number[] = [];
  const monitorPorts: number[] = [];
  const network = options.network;
  const hosts: string[] = [];
  for (let i = 0; i < size; i++) {
    const own = network?.[i];
    // A server on a stack of its own has every port to itself.
    ports.push(own === undefined ? await freePort() : 4222);
    routePorts.push(own === undefined ? await freePort() : 6222);
    monitorPorts.push(own === undefined ? await freePort() : 8222);
    hosts.push(own?.address ?? "127.0.0.1");
  }
  const routes = routePorts.map((port, i) => `nats-route://${hosts[i] ?? ""}:${port}`);
  const monitors = monitorPorts.map((port, i) => `http://${hosts[i] ?? ""}:${port}`);
  const startOne = (index: number, list: readonly ServerUser[]): Promise<EmbeddedServer> =>
    EmbeddedServer.start({
      dir: join(dir, `s${index + 1}`),
      port: ports[index] ?? 0,
      ...(network?.[index] === undefined
        ? {}
        : { host: hosts[index] ?? "", netns: network[index]?.netns ?? "" }),
      ...(options.accounts === undefined ? { users: list } : { accounts: options.accounts }),
      serverName: `mesh-test-s${index + 1}`,
      monitorPort: monitorPorts[index] ?? 0,
      cluster: {
        name: "mesh-test",
        port: routePorts[index] ?? 0,
        routes,
        ...(options.tls === undefined ? {} : { tls: options.tls }),
      },
      ...(options.tls === undefined ? {} : { tls: options.tls }),
      maxMemoryStore: 64 * 1024 * 1024,
      maxFileStore: 1024 * 1024 * 1024,
      startTimeoutMs: 30_000,
      ref: false,
      ...(options.binary === undefined ? {} : { binary: options.binary }),
    }).then((server) => {
      // Also when this process is killed before its exit hooks run (a runner's timeout).
      reapWithMe(server.pid, { group: false, graceMs: 2_000, root: dir });
      return server;
    });
  const servers: EmbeddedServer[] = [];
  try {
    servers.push(...(await Promise.all(ports.map((_, i) => startOne(i, users)))));
    await routesFormed(monitors);
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop({ graceMs: 0 })));
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const stop = once(async () => {
    await Promise.all(servers.map((s) => s.stop({ graceMs: 2_000 })));
    await rm(dir, { recursive: true, force: true });
  });
  const at = (index: number): EmbeddedServer => {
    const found = servers[index];
    if (found === undefined) throw new RangeError(`the cluster has no server ${index}`);
    return found;
  };
  return {
    urls: ports.map((port, i) => `nats://${hosts[i] ?? ""}:${port}`),
    admin,
    server: at,
    credential: (who, as) => ({
      servers: ports.map((port, i) => `nats://${hosts[i] ?? ""}:${port}`),
      user: who.user,
      password: who.password,
      node: as.node,
      module: as.module,
    }),
    async kill(index) {
      const server = at(index);
      process.kill(server.pid, "SIGKILL");
      await server.exited;
      await server.stop();
    },
    async start(index) {
      servers[index] = await startOne(index, users);
      await routesFormed(monitors);
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Resolves once every server has a route to every other one. A server answers clients before
 * its routes are up, and what is published meanwhile never reaches the servers it has no route
 * to: an account update sent to one server in that window stays unknown to the others until
 * their resolvers next sync (decision 0181). On a loaded machine the window is seconds long.
 */
async function routesFormed(monitors: readonly string[]): Promise<void> {
  const others = monitors.length - 1;
  await Promise.all(
    monitors.map((monitor, i) =>
      waitFor(
        async () => {
          const response = await fetch(`${monitor}/routez`);
          const routez = (await response.json()) as { routes?: Array<{ remote_id?: string }> };
          return new Set((routez.routes ?? []).map((route) => route.remote_id)).size >= others;
        },
        {
          timeout: 60_000,
          intervalMs: 100,
          what: `server ${i + 1}'s routes to the other ${others}`,
        },
      ),
    ),
  );
}

/**
 * How many replicas the mesh's layout takes on the servers `credential` reaches: the layout made
 * there through a quiet connection of its own, closed after.
 */
export async function layoutReplicas(credential: Credential): Promise<number | undefined> {
  await using bus = await MeshBus.connect(credential, { say: () => undefined });
  return (await ensureLayout(bus)).replicas;
}
