/**
 * The bus `mesh up` runs on this machine: one nats-server in `<root>/bus`, or with `--cluster N`
 * N of them in `<root>/bus/s1` … `s<N>`, each on its own client and route ports with its own
 * JetStream store, routes between all of them (docs/nats.md §5). Each server has a BusKeeper
 * that starts it again when it dies; the others keep serving meanwhile, and every process of
 * the mesh reconnects to whichever server is up (its credential names all of them).
 */
import { join } from "node:path";
import {
  EmbeddedServer,
  type NatsServerBinary,
  type ServerAccounts,
  type ServerCluster,
  type ServerTls,
  type ServerUser,
} from "@mesh/bus/server";
import { BusKeeper } from "./bus-keeper.js";

/** Where the servers listen: kept in the root's state, so a second `mesh up` comes back the same. */
export type BusShape =
  | { readonly kind: "single"; readonly port: number }
  | {
      readonly kind: "cluster";
      /** Each server's client port, in order. */
      readonly ports: readonly number[];
      /** Each server's route port, in order. */
      readonly routePorts: readonly number[];
    };

export interface LocalBusOptions {
  /** `<root>/bus`. */
  readonly dir: string;
  readonly node: string;
  readonly shape: BusShape;
  readonly binary: NatsServerBinary;
  /** The address the servers listen on (clients and routes); loopback by default. */
  readonly host?: string;
  /** Each server's own address, in order, when each has one (`--listen A,B,C`). */
  readonly hosts?: readonly string[];
  /** The network namespace each server runs in, in order (`--server-netns`). */
  readonly netns?: readonly string[];
  /** The address clients are told to dial (the host, or loopback when it listens everywhere). */
  readonly dialHost?: string;
  readonly tls?: ServerTls;
  /**
   * Who may log in, read at every start and restart: the users list as it stands on disk, or
   * the mesh's accounts as its revocations stand (decision 0080).
   */
  readonly auth: () => Promise<{ users: ServerUser[] } | { accounts: ServerAccounts }>;
  readonly say: (line: string) => void;
}

export class LocalBus {
  /** Every server's client url, in order: what the credentials name. */
  readonly urls: readonly string[];
  readonly #keepers: readonly BusKeeper[];

  private constructor(urls: readonly string[], keepers: readonly BusKeeper[]) {
    this.urls = urls;
    this.#keepers = keepers;
  }

  /** Starts every server (a failure of any stops the others) and keeps them running. */
  static async start(options: LocalBusOptions, signal: AbortSignal): Promise<LocalBus> {
    const { shape } = options;
    const dial = options.dialHost ?? "127.0.0.1";
    const ports = shape.kind === "single" ? [shape.port] : shape.ports;
    const urls = ports.map(
      (port) => `${options.tls === undefined ? "nats" : "tls"}://${dial}:${port}`,
    );
    const started = await Promise.allSettled(
      ports.map((_, index) =>
        BusKeeper.start(
          {
            start: async (inner) =>
              EmbeddedServer.start(await serverOptions(options, index, inner)),
            say: (line) => options.say(shape.kind === "single" ? line : `s${index + 1}: ${line}`),
          },
          signal,
        ),
      ),
    );
    const keepers = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const failed = started.find((s) => s.status === "rejected");
    if (failed !== undefined) {
      await Promise.all(keepers.map((k) => k.stop()));
      throw failed.reason;
    }
    return new LocalBus(urls, keepers);
  }

  /** The servers running now, in order. */
  get servers(): EmbeddedServer[] {
    return this.#keepers.map((k) => k.server);
  }

  /** Stops keeping the servers and stops them. Stopping twice is harmless. */
  async stop(): Promise<void> {
    await Promise.all(this.#keepers.map((k) => k.stop()));
  }
}

async function serverOptions(options: LocalBusOptions, index: number, signal: AbortSignal) {
  const { shape, node } = options;
  const host = options.hosts?.[index] ?? options.host;
  const netns = options.netns?.[index];
  const common = {
    ...(await options.auth()),
    binary: options.binary,
    signal,
    ...(host === undefined ? {} : { host }),
    ...(netns === undefined ? {} : { netns }),
    ...(options.tls === undefined ? {} : { tls: options.tls }),
  };
  if (shape.kind === "single") {
    return { ...common, dir: options.dir, port: shape.port, serverName: `mesh-${node}` };
  }
  const routeHost = (i: number) => {
    const h = options.hosts?.[i] ?? options.host;
    return h === undefined || h === "0.0.0.0" ? "127.0.0.1" : h;
  };
  const cluster: ServerCluster = {
    name: `mesh-${node}`,
    port: shape.routePorts[index] ?? 0,
    routes: shape.routePorts.map((port, i) => `nats-route://${routeHost(i)}:${port}`),
    ...(options.tls === undefined ? {} : { tls: options.tls }),
  };
  return {
    ...common,
    dir: join(options.dir, `s${index + 1}`),
    port: shape.ports[index] ?? 0,
    serverName: `mesh-${node}-s${index + 1}`,
    cluster,
  };
}
