/**
 * Which bus `mesh up` runs on a root: one server, or a cluster of N with the ports it took the
 * first time. A root keeps its shape: a single server's store (streams with one copy) is not a
 * cluster's, so starting a root with another shape is refused (BUS_SHAPE_CHANGED).
 */
import { createServer } from "node:net";
import { ErrorCode, MeshError } from "@mesh/protocol";
import type { RootPaths } from "../mesh-root.js";
import { positiveNumber } from "../verb.js";
import type { BusShape } from "./local-bus.js";

/** The fewest servers of a cluster: JetStream needs a majority up, so 3 survive the loss of one. */
export const MIN_CLUSTER = 3;
export const MAX_CLUSTER = 7;

/** The route port of servers that each listen on an address of their own (NATS's usual one). */
const ROUTE_PORT = 6222;

/** The `--cluster` option's parser: a whole number from 3 to 7. */
export function clusterSize(value: string): number {
  const n = positiveNumber("--cluster", "3", MAX_CLUSTER)(value);
  if (n < MIN_CLUSTER) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--cluster ${n} is too few: a JetStream cluster keeps answering only while more than half ` +
        `its servers are up, so it needs at least ${MIN_CLUSTER}; e.g. --cluster 3 (or leave it out for one server)`,
    );
  }
  return n;
}

export interface ShapeOptions {
  readonly paths: RootPaths;
  /** The first server's client port. */
  readonly port: number;
  /** `--cluster N`, when given. */
  readonly cluster?: number;
  /**
   * How many addresses `--listen` named: one per server, each server then listens on the same
   * client port (and route port) of its own address.
   */
  readonly hosts?: number;
  /** What the root remembers from its last run. */
  readonly previous?: {
    readonly port: number;
    readonly cluster?:
      { readonly ports: readonly number[]; readonly routePorts: readonly number[] } | undefined;
  };
}

/** The shape this run takes: the one asked for, else the root's; a change is refused. */
export async function busShape(options: ShapeOptions): Promise<BusShape> {
  const { previous, port } = options;
  const kept = previous?.cluster;
  if (previous !== undefined) {
    const was = kept === undefined ? 1 : kept.ports.length;
    if (options.cluster !== undefined && options.cluster !== was) {
      throw shapeChanged(options.paths, was, options.cluster);
    }
  }
  const size = options.cluster ?? kept?.ports.length ?? 1;
  if (options.hosts !== undefined && options.hosts !== size) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--listen names ${options.hosts} addresses for ${size === 1 ? "one server" : `${size} servers`}; give one address for all, or one for each server (--cluster ${options.hosts})`,
    );
  }
  if (size === 1) return { kind: "single", port };
  if (options.hosts !== undefined) {
    // Each on its own address: the same ports everywhere, 6222 for routes as NATS has them.
    const route = port === ROUTE_PORT ? ROUTE_PORT + 1 : ROUTE_PORT;
    return { kind: "cluster", ports: Array(size).fill(port), routePorts: Array(size).fill(route) };
  }
  if (kept !== undefined && kept.ports[0] === port) {
    return { kind: "cluster", ports: kept.ports, routePorts: kept.routePorts };
  }
  const ports = [port];
  const taken = new Set([port]);
  while (ports.length < size) ports.push(await freePort(taken));
  const routePorts: number[] = [];
  while (routePorts.length < size) routePorts.push(await freePort(taken));
  return { kind: "cluster", ports, routePorts };
}

function shapeChanged(paths: RootPaths, was: number, asked: number): MeshError {
  const how = (n: number) => (n === 1 ? "one server" : `a cluster of ${n} (--cluster ${n})`);
  return new MeshError(
    ErrorCode.BUS_SHAPE_CHANGED,
    `the mesh in ${paths.root} runs on ${how(was)}, and was asked for ${how(asked)}; their stores ` +
      `are not interchangeable — start it as before (${was === 1 ? "without --cluster" : `--cluster ${was}`}), ` +
      "or give the new shape another --root",
    { path: paths.state },
  );
}

/** A port free on loopback now and not in `taken` (which it joins). */
async function freePort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.once("error", reject);
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address();
        const chosen = typeof address === "object" && address !== null ? address.port : 0;
        probe.close(() => resolve(chosen));
      });
    });
    if (port !== 0 && !taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
}
