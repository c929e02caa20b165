/**
 * `mesh up --listen ADDR`: the bus (and a cluster's routes) listens on ADDR for other machines,
 * over TLS with a certificate the mesh makes for itself (`<root>/tls/`, kept) unless
 * `--tls-cert/--tls-key` name one. Every credential pins the certificate's SHA-256 fingerprint and
 * carries the certificate as its one authority; a join token carries the fingerprint
 * (decision 0075). Plain TCP there only with `--insecure`. Without `--listen` the bus stays on
 * loopback, as before.
 */
import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join, resolve } from "node:path";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { certificateFingerprint, keyMatches, makeSelfSigned } from "@mesh/bus/server";
import { writeFileAtomic } from "@mesh/kit";
import type { RootPaths } from "../mesh-root.js";
import { isLoopback } from "./foreign-bus.js";

/** What the root remembers of `--listen`. */
export interface ListenState {
  readonly host: string;
  /**
   * A cluster whose servers each listen on an address of their own (`--listen A,B,C`, one per
   * server, in order; `host` is the first): each on its own machine, or in its own network
   * namespace on this one (`--server-netns`).
   */
  readonly hosts?: readonly string[] | undefined;
  /** False with `--insecure`: plain TCP. */
  readonly tls: boolean;
  /** A certificate and key the operator gave (`--tls-cert/--tls-key`), by path. */
  readonly cert?: string | undefined;
  readonly key?: string | undefined;
}

export interface ListenOptions {
  readonly paths: RootPaths;
  readonly listen?: string;
  readonly port?: number;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly insecure?: boolean;
  readonly previous?: ListenState | undefined;
}

/** The certificate the servers present, and the pin every credential carries. */
export interface BusTls {
  readonly certFile: string;
  readonly keyFile: string;
  /** The certificate's SHA-256 as `AA:BB:…`. */
  readonly fingerprint: string;
  /** The certificate (PEM): the one authority a credential trusts. */
  readonly ca: string;
}

export interface ListenPlan {
  readonly state: ListenState;
  /** The port ADDR named, if it named one. */
  readonly port?: number;
  readonly tls: BusTls | undefined;
}

/** The listen plan for this run: the one asked for, else the root's; undefined for loopback only. */
export async function planListen(options: ListenOptions): Promise<ListenPlan | undefined> {
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined)) {
    throw new MeshError(ErrorCode.USAGE, "--tls-cert and --tls-key go together: give both files");
  }
  if (
    options.listen === undefined &&
    options.tlsCert !== undefined &&
    options.previous === undefined
  ) {
    throw new MeshError(ErrorCode.USAGE, "--tls-cert is for --listen ADDR: give the address too");
  }
  let state = options.previous;
  let port: number | undefined;
  if (options.listen !== undefined) {
    const addresses = options.listen.split(",").map(parseListen);
    const ports = new Set(addresses.flatMap((a) => (a.port === undefined ? [] : [a.port])));
    if (options.port !== undefined) ports.add(options.port);
    if (ports.size > 1) {
      throw new MeshError(
        ErrorCode.USAGE,
        `--listen ${options.listen}${options.port === undefined ? "" : ` and --port ${options.port}`} name ${ports.size} ports; every server listens on the same port of its own address: give the port once`,
      );
    }
    port = [...ports][0];
    const hosts = addresses.map((a) => a.host);
    if (new Set(hosts).size !== hosts.length) {
      throw new MeshError(
        ErrorCode.USAGE,
        `--listen ${options.listen} names an address twice; give each server's address once`,
      );
    }
    state = {
      host: hosts[0] ?? "",
      ...(hosts.length > 1 ? { hosts } : {}),
      tls: options.insecure !== true,
      ...(options.tlsCert === undefined
        ? {}
        : { cert: resolve(options.tlsCert), key: resolve(options.tlsKey ?? "") }),
    };
  }
  if (state === undefined) return undefined;
  const tls = state.tls ? await certificate(options.paths, state) : undefined;
  return { state, ...(port === undefined ? {} : { port }), tls };
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`; an address that means "every address" is refused. */
export function parseListen(value: string): { host: string; port?: number } {
  const match = /^(?:\[([^\]\s]+)\]|([^:[\]\s]+))(?::(\d+))?$/.exec(value.trim());
  const host = match?.[1] ?? match?.[2];
  const port = match?.[3] === undefined ? undefined : Number(match[3]);
  if (host === undefined || (port !== undefined && (port < 1 || port > 65535))) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--listen ${JSON.stringify(value)} is not an address; give the one other machines reach this one at, e.g. --listen 10.0.0.5 or --listen 10.0.0.5:4222`,
    );
  }
  if (host === "0.0.0.0" || host === "::" || host === "*") {
    throw new MeshError(
      ErrorCode.USAGE,
      `--listen ${value} means every address, but credentials must name one other machines reach; give this machine's address, e.g. --listen 10.0.0.5`,
    );
  }
  return { host, ...(port === undefined ? {} : { port }) };
}

/** Every address a server listens on: one for all, or each server's own. */
export function listenHosts(state: ListenState): readonly string[] {
  return state.hosts ?? [state.host];
}

/** Whether a plan listens beyond loopback without TLS (said loudly; it needed --insecure). */
export function plainBeyondLoopback(plan: ListenPlan | undefined): boolean {
  return plan !== undefined && plan.tls === undefined && !isLoopback(plan.state.host);
}

/** The operator's certificate, or the mesh's own (made once, made again for a new address). */
async function certificate(paths: RootPaths, state: ListenState): Promise<BusTls> {
  if (state.cert !== undefined && state.key !== undefined) {
    const [certPem, keyPem] = await Promise.all([
      readFile(state.cert, "utf8"),
      readFile(state.key, "utf8"),
    ]).catch((error: unknown) => {
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `cannot read --tls-cert ${state.cert ?? ""} or --tls-key ${state.key ?? ""} (${(error as Error).message})`,
        { cause: error },
      );
    });
    if (!keyMatches(certPem, keyPem)) {
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `--tls-key ${state.key} is not the key of --tls-cert ${state.cert}; give the pair that belongs together`,
        { path: state.key },
      );
    }
    return {
      certFile: state.cert,
      keyFile: state.key,
      fingerprint: certificateFingerprint(certPem),
      ca: certPem,
    };
  }
  const dir = join(paths.root, "tls");
  const certFile = join(dir, "bus-cert.pem");
  const keyFile = join(dir, "bus-key.pem");
  const kept = await readFile(certFile, "utf8").catch(() => undefined);
  const served = listenHosts(state);
  if (kept !== undefined && served.every((host) => covers(kept, host))) {
    return { certFile, keyFile, fingerprint: certificateFingerprint(kept), ca: kept };
  }
  const hosts = [...new Set([...served, "127.0.0.1", "localhost"])];
  const made = makeSelfSigned({ commonName: `mesh bus ${state.host}`, hosts });
  // Durable, the key first: a crash between the two leaves no certificate, or one that does not
  // cover the host, so both are made again on the next start.
  await writeFileAtomic(keyFile, made.keyPem, { mode: 0o600 });
  await writeFileAtomic(certFile, made.certPem, { mode: 0o644 });
  return { certFile, keyFile, fingerprint: made.fingerprint, ca: made.certPem };
}

function covers(certPem: string, host: string): boolean {
  const cert = new X509Certificate(certPem);
  return isIP(host) === 0 ? cert.checkHost(host) !== undefined : cert.checkIP(host) !== undefined;
}
