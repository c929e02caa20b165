/**
 * The bus a `mesh up` runs on, and the credentials of the mesh's own principals for it:
 * - its own: one nats-server, or `--cluster N` of them (local-bus.ts), under the users list the
 *   mesh writes;
 * - a foreign one (`--bus URLS --bus-credential FILE`): a bus someone else runs, reached with the
 *   one login its operator gave. The mesh writes no users list there: every process of the mesh
 *   speaks as that login, under its own principal's name and inbox.
 * The root remembers which (`mesh.json`), so a second `mesh up` comes back the same.
 */
import { join } from "node:path";
import { z } from "zod";
import { ErrorCode, MeshError, Principal, type Credential } from "@mesh/protocol";
import { writeCredential } from "@mesh/bus";
import { FULL_PERMISSIONS, findServer, type AuthMode } from "@mesh/bus/server";
import { buildGrant, mcpGrant, operatorGrant } from "@mesh/core";
import { partsPrincipalGrant } from "@mesh/delivery";
import { PARTS_SOURCE } from "../shipped.js";
import type { PrincipalSpec } from "../principals.js";
import { credentialPath, readJson, writeJson, type RootPaths } from "../mesh-root.js";
import { busAuth, chooseAuth } from "./bus-auth.js";
import { busShape } from "./bus-shape.js";
import { checkForeignUrls, readBusLogin, FOREIGN_LOGIN_FILE } from "./foreign-bus.js";
import {
  planListen,
  plainBeyondLoopback,
  type ListenPlan,
  type ListenState,
} from "./bus-listen.js";
import { LocalBus, type BusShape } from "./local-bus.js";

/** What a root remembers between runs. */
export const RootState = z
  .object({
    node: z.string(),
    /** The (first) server's client port; 0 on a foreign bus. */
    port: z.number().int(),
    /** With `--cluster N`: every server's client and route port. */
    cluster: z
      .object({ ports: z.array(z.number().int()), routePorts: z.array(z.number().int()) })
      .strict()
      .optional(),
    /** With `--bus`: the foreign bus's urls (its login is kept in credentials/bus.json). */
    bus: z
      .object({ servers: z.array(z.string()).min(1) })
      .strict()
      .optional(),
    /** With `--listen ADDR`: where the bus listens, and whether over TLS. */
    listen: z
      .object({
        host: z.string(),
        hosts: z.array(z.string()).optional(),
        tls: z.boolean(),
        cert: z.string().optional(),
        key: z.string().optional(),
      })
      .strict()
      .optional(),
    /** With `--server-netns`: the network namespace each server runs in, in order. */
    netns: z.array(z.string()).optional(),
    /** How the mesh's own bus lets users in; absent in roots made before accounts: a list. */
    auth: z.enum(["users", "accounts"]).optional(),
  })
  .strict();
export type RootState = z.infer<typeof RootState>;

/** What `mesh up`'s options say about the bus: its own (its port, a cluster, where it listens) or a foreign one. */
export interface BusChoice {
  readonly port?: number;
  /** Run N servers in a cluster (N ≥ 3) instead of one. */
  readonly cluster?: number;
  /** `--bus`: a foreign bus's urls, comma-separated: the mesh runs no server of its own. */
  readonly bus?: string;
  /** The login the foreign bus's operator gave the mesh. */
  readonly busCredential?: string;
  /** Allow a bus beyond loopback without TLS. */
  readonly insecure?: boolean;
  /** `--listen ADDR`: listen for other machines on this address (over TLS unless --insecure). */
  readonly listen?: string;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  /**
   * `--server-netns NS1,NS2,NS3`: each server of the cluster runs in that network namespace
   * (`ip netns exec`), as on a machine of its own; with `--listen` naming each server's address.
   */
  readonly serverNetns?: string;
  /**
   * `--auth`: how the mesh's own bus lets users in: `accounts` (signed JWTs, nothing reloaded; the
   * default for a new root) or `users` (a users list reloaded on every change). A root keeps its mode.
   */
  readonly auth?: AuthMode;
}

const BUS_CHOICE_KEYS = [
  "port",
  "cluster",
  "bus",
  "busCredential",
  "insecure",
  "listen",
  "tlsCert",
  "tlsKey",
  "serverNetns",
  "auth",
] as const satisfies readonly (keyof BusChoice)[];

/** The bus choice among a larger options object: only the keys that are given. */
export function busChoiceOf(options: BusChoice): BusChoice {
  const choice: Record<string, unknown> = {};
  for (const key of BUS_CHOICE_KEYS) if (options[key] !== undefined) choice[key] = options[key];
  return choice;
}

export interface UpBusOptions extends BusChoice {
  readonly paths: RootPaths;
  readonly node: string;
  readonly previous: RootState | undefined;
  readonly pickPort: () => Promise<number>;
  readonly say: (line: string) => void;
  readonly signal: AbortSignal;
}

/** A principal's credential file and content. */
export interface PrincipalCredential {
  readonly path: string;
  readonly credential: Credential;
}

export interface UpBus {
  /** Every server's url, as the credentials name them. */
  readonly urls: readonly string[];
  /** The servers the mesh runs (none on a foreign bus). */
  readonly local: LocalBus | undefined;
  /** Options the controller is started with beside `--root`. */
  readonly controllerArgs: readonly string[];
  /** The host's credential, when the bus gives it without a join (a foreign bus). */
  readonly hostCredential: Credential | undefined;
  /** The bus certificate every credential pins, when the bus speaks TLS. */
  readonly pin: { readonly fingerprint: string; readonly ca: string } | undefined;
  credentialOf(principal: string): PrincipalCredential;
  stop(): Promise<void>;
}

/**
 * The mesh's own service principals: `mesh up` issues them, the broker issues the rest. The
 * assigner's and delivery's grants are their parts' manifests (decision 0122).
 */
export async function upPrincipals(node: string): Promise<PrincipalSpec[]> {
  const parts = { node, dir: PARTS_SOURCE };
  return [
    { principal: Principal.controller, permissions: FULL_PERMISSIONS },
    { principal: Principal.operator, permissions: operatorGrant({ node }) },
    {
      principal: Principal.assigner,
      permissions: await partsPrincipalGrant(Principal.assigner, parts),
    },
    {
      principal: Principal.delivery,
      permissions: await partsPrincipalGrant(Principal.delivery, parts),
    },
    { principal: Principal.build, permissions: buildGrant({ node }) },
    // `mesh mcp`'s: discovers and calls tools, nothing else (docs/mcp.md).
    { principal: Principal.mcp, permissions: mcpGrant({ node }) },
  ];
}

/** Starts (or reaches) the bus and makes the principals' credentials for it. */
export async function startUpBus(options: UpBusOptions): Promise<UpBus> {
  const { previous } = options;
  const foreign = options.bus !== undefined || previous?.bus !== undefined;
  if (foreign) {
    if (options.auth !== undefined) {
      throw new MeshError(
        ErrorCode.USAGE,
        "--auth is for the mesh's own bus; on a foreign bus (--bus) the mesh speaks as the one login its operator gave",
      );
    }
    if (previous !== undefined && previous.bus === undefined) {
      throw shapeChanged(options.paths, "the mesh's own bus", "a foreign bus (--bus)");
    }
    if (
      previous?.bus !== undefined &&
      (options.cluster !== undefined || options.port !== undefined)
    ) {
      throw shapeChanged(options.paths, "a foreign bus (--bus)", "a bus of its own");
    }
    if (previous?.bus === undefined && options.busCredential === undefined) {
      throw new MeshError(
        ErrorCode.USAGE,
        "--bus needs --bus-credential FILE: the login (JSON with user and password) the bus's operator gave the mesh",
      );
    }
    return foreignBus(options);
  }
  return localBus(options);
}

async function localBus(options: UpBusOptions): Promise<UpBus> {
  const { paths, node, previous, say } = options;
  const binary = await findServer({ signal: options.signal });
  const listen = await planListen({
    paths,
    ...pickDefined(options, ["listen", "port", "tlsCert", "tlsKey", "insecure"]),
    previous: previous?.listen,
  });
  const port = options.port ?? listen?.port ?? previous?.port ?? (await options.pickPort());
  const shape = await busShape({
    paths,
    port,
    ...(previous === undefined ? {} : { previous }),
    ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
    ...(listen?.state.hosts === undefined ? {} : { hosts: listen.state.hosts.length }),
  });
  const netns = serverNetns(options.serverNetns, previous?.netns, shape);
  const { host, hosts, urls, pin, serverTls } = addresses(
    listen,
    shape.kind === "single" ? [port] : shape.ports,
  );
  if (plainBeyondLoopback(listen)) {
    say(
      `--insecure: the bus listens on ${host} in plain TCP; passwords cross the network in clear`,
    );
  }
  const auth = chooseAuth(options.auth, previous);
  // Issued here because the controller cannot issue its own credential and these run on this
  // machine only; hosts and modules get theirs from the controller's broker (decision 0050).
  const principals = await busAuth(paths, {
    auth,
    node,
    servers: urls,
    principals: await upPrincipals(node),
    ...(pin === undefined ? {} : { pin }),
  });
  say(
    `starting ${urls.length === 1 ? "nats-server" : `${urls.length} nats-servers in a cluster,`} ` +
      `${binary.version} on ${urls.join(",")} (${auth === "accounts" ? "accounts: signed users, no reloads" : "a users list"})`,
  );
  // Every start, the first and each restart after a server died, runs who may log in as it
  // stands on disk (the users list: mesh up's principals and every user the broker issued; or
  // the accounts with their revocations), so none is refused while the controller catches up.
  const local = await LocalBus.start(
    {
      dir: paths.bus,
      node,
      shape,
      binary,
      ...(listen === undefined ? {} : { host, hosts }),
      ...(netns === undefined ? {} : { netns }),
      ...(serverTls === undefined ? {} : { tls: serverTls }),
      auth: () => principals.serverAuth(),
      say,
    },
    options.signal,
  );
  await writeJson(paths.state, {
    node,
    port,
    auth,
    ...(shape.kind === "cluster"
      ? { cluster: { ports: [...shape.ports], routePorts: [...shape.routePorts] } }
      : {}),
    ...(listen === undefined ? {} : { listen: withoutUndefined(listen.state) }),
    ...(netns === undefined ? {} : { netns: [...netns] }),
  } satisfies RootState);
  return {
    urls,
    local,
    controllerArgs: [],
    hostCredential: undefined,
    pin,
    credentialOf: (principal) => made(principals.credentials, principal),
    stop: () => local.stop(),
  };
}

/** Where the servers listen, the urls credentials name, and the certificate they pin. */
function addresses(listen: ListenPlan | undefined, ports: readonly number[]) {
  const host = listen?.state.host ?? "127.0.0.1";
  // Each server's own address, when each has one; else every server on the one host.
  const hosts = ports.map((_, i) => listen?.state.hosts?.[i] ?? host);
  const dial = (h: string) => (h.includes(":") ? `[${h}]` : h);
  const tls = listen?.tls;
  return {
    host,
    hosts,
    urls: ports.map(
      (p, i) => `${tls === undefined ? "nats" : "tls"}://${dial(hosts[i] ?? host)}:${p}`,
    ),
    pin: tls === undefined ? undefined : { fingerprint: tls.fingerprint, ca: tls.ca },
    // Routes verify each other with the certificate as their authority.
    serverTls:
      tls === undefined
        ? undefined
        : { certFile: tls.certFile, keyFile: tls.keyFile, caFile: tls.certFile },
  };
}

function made(
  credentials: ReadonlyMap<string, PrincipalCredential>,
  principal: string,
): PrincipalCredential {
  const found = credentials.get(principal);
  if (found === undefined) {
    throw new MeshError(ErrorCode.INTERNAL, `the ${principal}'s credential was not made`);
  }
  return found;
}

async function foreignBus(options: UpBusOptions): Promise<UpBus> {
  const { paths, node } = options;
  const kept = join(paths.credentials, FOREIGN_LOGIN_FILE);
  const login = await readBusLogin(options.busCredential ?? kept, {
    given: options.busCredential !== undefined,
  });
  const urls =
    options.bus === undefined
      ? [...(options.previous?.bus?.servers ?? [])]
      : checkForeignUrls(options.bus, login, options.insecure === true);
  if (options.busCredential !== undefined) {
    await writeCredential(kept, { ...login, servers: urls, node, module: "bus" });
  }
  const credentials = new Map<string, PrincipalCredential>();
  for (const principal of [...(await upPrincipals(node)).map((p) => p.principal), Principal.host]) {
    const credential: Credential = { ...login, servers: urls, node, module: principal };
    const path = credentialPath(paths, principal);
    await writeCredential(path, credential);
    credentials.set(principal, { path, credential });
  }
  await writeJson(paths.state, { node, port: 0, bus: { servers: urls } } satisfies RootState);
  options.say(
    `on the bus at ${urls.join(",")} as ${login.user}: every process of the mesh speaks as this ` +
      "one login (the bus holds them to what it may do, not to each module's grants)",
  );
  return {
    urls,
    local: undefined,
    controllerArgs: ["--shared-login"],
    hostCredential: credentials.get(Principal.host)?.credential,
    pin:
      login.fingerprint === undefined || login.ca === undefined
        ? undefined
        : { fingerprint: login.fingerprint, ca: login.ca },
    credentialOf: (principal) => made(credentials, principal),
    stop: () => Promise.resolve(),
  };
}

function pickDefined<T extends object, K extends keyof T>(
  value: T,
  keys: readonly K[],
): { [P in K]?: Exclude<T[P], undefined> } {
  const out: { [P in K]?: Exclude<T[P], undefined> } = {};
  for (const key of keys) {
    if (value[key] !== undefined) out[key] = value[key] as Exclude<T[K], undefined>;
  }
  return out;
}

function withoutUndefined(state: ListenState): NonNullable<RootState["listen"]> {
  return {
    host: state.host,
    ...(state.hosts === undefined ? {} : { hosts: [...state.hosts] }),
    tls: state.tls,
    ...(state.cert === undefined ? {} : { cert: state.cert }),
    ...(state.key === undefined ? {} : { key: state.key }),
  };
}

/**
 * The namespace each server runs in: the ones asked for, else the root's. One per server of a
 * cluster; a server in a namespace of its own needs an address there (`--listen A,B,C`).
 */
function serverNetns(
  asked: string | undefined,
  kept: readonly string[] | undefined,
  shape: BusShape,
): readonly string[] | undefined {
  const names = asked?.split(",").map((n) => n.trim()) ?? kept;
  if (names === undefined) return undefined;
  const servers = shape.kind === "single" ? 1 : shape.ports.length;
  if (names.length !== servers || names.some((n) => !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(n))) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--server-netns ${JSON.stringify(asked ?? names.join(","))} must name one network namespace (letters, digits, _ . -) for each of the ${servers} servers, in order, e.g. --server-netns ns1,ns2,ns3`,
    );
  }
  if (shape.kind === "cluster" && new Set(shape.ports).size !== 1) {
    throw new MeshError(
      ErrorCode.USAGE,
      "--server-netns runs each server on an address of its own: give one per server with --listen A,B,C",
    );
  }
  return names;
}

function shapeChanged(paths: RootPaths, was: string, asked: string): MeshError {
  return new MeshError(
    ErrorCode.BUS_SHAPE_CHANGED,
    `the mesh in ${paths.root} runs on ${was}, and was asked for ${asked}; start it as before, ` +
      "or give the new bus another --root",
    { path: paths.state },
  );
}

/** The root's state, or undefined on a new root. */
export async function readState(paths: RootPaths): Promise<RootState | undefined> {
  const raw = await readJson(paths.state);
  if (raw === undefined) return undefined;
  const parsed = RootState.safeParse(raw);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${paths.state} is not what mesh up wrote (${parsed.error.issues[0]?.message ?? "bad shape"}); fix or remove it (the bus data stays)`,
      { path: paths.state },
    );
  }
  return parsed.data;
}
