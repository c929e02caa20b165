/**
 * What the host's tests share: a real bus with the layout and a user holding exactly the host's
 * grant, bundles made as real tar.gz archives (and hand-made ones with entries no tool would
 * write), compositions, and waiting for a condition with a deadline.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { create } from "tar";
import { hostGrant } from "@mesh/core";
import { ArtifactStore, KvBucket, MeshBus, ensureLayout, seal } from "@mesh/bus";
import {
  startTestServer,
  startTimeOf,
  waitFor as waitUntil,
  type TestServer,
} from "@mesh/bus/testing";
import {
  Bucket,
  ObjectStore,
  Principal,
  artifactSource,
  bundlePath,
  needResourceId,
  type ArchiveResource,
  type ComposedModule,
  type Composed,
  type Credential,
  type NeedResource,
  type Permissions,
  type ProcessResource,
  type Resource,
} from "@mesh/protocol";
import { fingerprintOf } from "@mesh/core";
import { Host, type HostOptions } from "./host.js";
import { DEFAULT_TAIL_LIMITS } from "./log-lines.js";
import { Supervisor, type ExitInfo, type ProcessSpec } from "./supervisor.js";

export interface Bus {
  readonly server: TestServer;
  readonly admin: MeshBus;
  readonly artifacts: ArtifactStore;
  /** The host's credential: a user with exactly hostGrant({node}). */
  hostCredential(node: string): Credential;
  /** Writes `node`'s composition of these resources, as the controller would. */
  compose(
    node: string,
    resources: readonly Resource[],
    modules?: Record<string, ComposedModule>,
  ): Promise<void>;
  stop(): Promise<void>;
}

export const HOST_PASSWORD = "host-password-for-tests";

/** A server with the layout, and a host user for each node named. */
export async function startBus(
  nodes: readonly string[],
  more: readonly { user: string; password: string; permissions: Permissions }[] = [],
): Promise<Bus> {
  const server = await startTestServer({
    users: [
      ...nodes.map((node) => ({
        user: `host-${node}`,
        password: HOST_PASSWORD,
        permissions: hostGrant({ node }),
      })),
      ...more,
    ],
  });
  const admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "admin", module: Principal.controller }),
  );
  await ensureLayout(admin);
  const artifacts = await ArtifactStore.open(admin);
  return {
    server,
    admin,
    artifacts,
    hostCredential: (node) =>
      credentialFor(
        server,
        { user: `host-${node}`, password: HOST_PASSWORD },
        { node, module: Principal.host },
      ),
    async compose(node, resources, modules) {
      const composed = await KvBucket.open(admin, Bucket.composed);
      await composed.put(node, composedOf(node, resources, modules));
    },
    async stop() {
      await admin.close();
      await server.stop();
    },
  };
}

/** What a test file (or suite) on the bus has: read it inside hooks and tests only. */
export interface BusAndRoot {
  readonly bus: Bus;
  readonly root: string;
}

/**
 * The set-up the host's tests on a bus share, as hooks of the enclosing suite (the file at top
 * level): before its tests a bus (startBus of `nodes` and `users`), a temporary root, then
 * `starting` (what the tests share on them); after them `ending` (what the tests left running),
 * then the bus stopped and the root removed. One hook each: a file's own top-level `before` runs
 * as soon as it is declared, so what needs the bus goes in `starting`.
 */
export function busAndRoot(
  nodes: readonly string[],
  options: {
    readonly users?: Parameters<typeof startBus>[1];
    readonly starting?: () => Promise<void>;
    readonly ending?: () => Promise<void>;
  } = {},
): BusAndRoot {
  let bus: Bus | undefined;
  let root: string | undefined;
  before(async () => {
    bus = await startBus(nodes, options.users);
    root = await tempRoot();
    await options.starting?.();
  });
  after(async () => {
    try {
      await options.ending?.();
    } finally {
      await bus?.stop();
      if (root !== undefined) await rm(root, { recursive: true, force: true });
    }
  });
  const set = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("busAndRoot: read before its before hook ran");
    return value;
  };
  return {
    get bus() {
      return set(bus);
    },
    get root() {
      return set(root);
    },
  };
}

/** A credential for one of the server's users, speaking as `<node>.<module>`. */
export function credentialFor(
  server: { readonly url: string },
  who: { readonly user: string; readonly password: string },
  as: { readonly node: string; readonly module: string },
): Credential {
  return { servers: [server.url], user: who.user, password: who.password, ...as };
}

const roots = new Set<string>();

/**
 * A temporary root for a host. Should a test process end before its test stops its host (a
 * failure, a timeout), every process a host recorded under these roots is ended by its pid when
 * the test process exits, so no test leaves processes behind.
 */
export async function tempRoot(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "mesh-host-"));
  if (roots.size === 0) process.once("exit", endRecordedProcesses);
  roots.add(root);
  return root;
}

function endRecordedProcesses(): void {
  for (const root of roots) {
    let processes: Record<string, { pid?: number; startTime?: string }> = {};
    try {
      const text = readFileSync(join(root, "state", "applied.json"), "utf8");
      processes = (JSON.parse(text) as { processes?: typeof processes }).processes ?? {};
    } catch {
      // No state: the host started nothing.
    }
    for (const { pid, startTime } of Object.values(processes)) {
      if (pid === undefined) continue;
      try {
        // Field 22, as proc.ts reads it: only the very process the host recorded.
        if (startTimeOf(pid) === startTime) process.kill(-pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
    rmSync(root, { recursive: true, force: true });
  }
}

/** A tar.gz of the given files, made by the tar package. */
export async function bundleOf(files: Record<string, string>): Promise<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), "mesh-bundle-"));
  try {
    for (const [name, content] of Object.entries(files)) {
      await mkdir(join(dir, name, ".."), { recursive: true });
      await writeFile(join(dir, name), content);
    }
    const out = join(dir, "..", `${randomBytes(6).toString("hex")}.tgz`);
    await create({ gzip: true, file: out, cwd: dir, portable: true }, Object.keys(files).sort());
    const { readFile } = await import("node:fs/promises");
    const bytes = await readFile(out);
    await rm(out, { force: true });
    return bytes;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Hand-made archives: one builder for every package's tests. */
export { rawTar, type RawEntry } from "@mesh/bus/testing";

/** A process resource running `script` (a file in its bundle) with node. */
export function processResource(input: {
  root: string;
  module: string;
  name: string;
  digest: string;
  bundle?: string;
  script?: string;
  env?: Record<string, string>;
  restartOn?: string[];
}): ProcessResource {
  const bundle = input.bundle ?? "main";
  return {
    id: `${input.module}.process-${input.name}`,
    type: "process",
    name: input.name,
    module: input.module,
    source: artifactSource(ObjectStore.artifacts, input.digest),
    digest: input.digest,
    path: bundlePath(input.root, input.module, bundle),
    run: [process.execPath, input.script ?? "main.js"],
    env: input.env ?? {},
    "restart-on": input.restartOn ?? [],
  };
}

export function archiveResource(input: {
  root: string;
  module: string;
  bundle: string;
  digest: string;
}): ArchiveResource {
  return {
    id: `${input.module}.bundle-${input.bundle}`,
    type: "archive",
    module: input.module,
    source: artifactSource(ObjectStore.artifacts, input.digest),
    digest: input.digest,
    path: bundlePath(input.root, input.module, input.bundle),
  };
}

/**
 * A secret need `<module>.need-<name>`, written in the module's secrets folder (or at `path`):
 * `value` sealed to the node's `publicKey`, or `sealed` as it stands.
 */
export function secretNeed(
  input: { root: string; module: string; name: string; path?: string; user?: string } & (
    { publicKey: string; value: string } | { sealed: string }
  ),
): NeedResource {
  const id = needResourceId(input.module, input.name);
  return {
    id,
    type: "need",
    kind: "secret",
    module: input.module,
    name: input.name,
    path: input.path ?? join(input.root, "secrets", input.module, input.name),
    ...(input.user === undefined ? {} : { user: input.user }),
    sealed: "sealed" in input ? input.sealed : seal(input.publicKey, input.value, id),
  };
}

export function composedOf(
  node: string,
  resources: readonly Resource[],
  modules?: Record<string, ComposedModule>,
): Composed {
  const sorted = [...resources].sort((a, b) => (a.id < b.id ? -1 : 1));
  return {
    node,
    resources: sorted,
    ...(modules === undefined ? {} : { modules }),
    fingerprint: fingerprintOf(sorted),
  };
}

/** Waits until `check` returns a value other than undefined/false, polling, within `ms` (stretched). */
export function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 30_000,
): Promise<T> {
  return waitUntil(check, { what, timeout: ms });
}

/** A script that runs until it is ended, writing a line when it starts. */
export const LONG_RUNNING = `console.log("started", process.pid); setInterval(() => {}, 1 << 30);`;

/** What a test's host runs with unless it says otherwise: quick health, restarts and polls. */
export const FAST_HOST = {
  health: { healthyMs: 500 },
  backoff: { initialMs: 100, maxMs: 2_000 },
  graceMs: 2_000,
  pollMs: 100,
  heartbeatMs: 500,
  log: () => undefined,
} as const satisfies Partial<HostOptions>;

/**
 * What the hosts of the tests that watch one through a bus outage or a restart run with: quick
 * health, polls and grace, their processes stopped when they stop, each line logged into `logged`.
 */
export const loggingHost = (logged: string[]) =>
  ({
    health: { healthyMs: 300 },
    pollMs: 100,
    graceMs: 2_000,
    stopProcessesOnStop: true,
    log: (line: string) => logged.push(line),
  }) as const satisfies Partial<HostOptions>;

/**
 * The host fixture: a host of `node` on the bus (FAST_HOST, stopping its processes when it
 * stops), in `root` (a new temporary one when omitted), running for the length of `body`; then
 * stopped, and its root removed, also when the body fails.
 */
export async function withHost<T>(
  bus: Bus,
  options: Partial<HostOptions> & { readonly node: string },
  body: (host: Host, root: string) => Promise<T>,
): Promise<T> {
  const root = options.root ?? (await tempRoot());
  try {
    const host = await Host.create({
      ...FAST_HOST,
      stopProcessesOnStop: true,
      credential: bus.hostCredential(options.node),
      ...options,
      root,
    });
    const running = host.run({ signal: new AbortController().signal });
    try {
      return await body(host, root);
    } finally {
      await host.stop();
      await running;
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * A supervisor of one process, `t.process-p`, that runs `script` (its bundle's main.cjs) with
 * node in a new temporary root, restarting quickly (100 ms doubling, no jitter) and keeping each
 * exit; `spec` adds to the process's spec. The root is the caller's to remove.
 */
export async function supervisedScript(
  script: string,
  options: {
    readonly healthyMs: number;
    readonly graceMs: number;
    readonly standbyAfterMs?: number;
    readonly spec?: Partial<ProcessSpec>;
  },
): Promise<{ root: string; supervisor: Supervisor; spec: ProcessSpec; exits: ExitInfo[] }> {
  const root = await tempRoot();
  const cwd = join(root, "bundle");
  await mkdir(cwd, { recursive: true });
  await writeFile(join(cwd, "main.cjs"), script);
  const exits: ExitInfo[] = [];
  const supervisor = new Supervisor({
    root,
    backoff: { initialMs: 100, maxMs: 10_000, jitter: 0 },
    healthyMs: options.healthyMs,
    graceMs: options.graceMs,
    tail: DEFAULT_TAIL_LIMITS,
    pollMs: 50,
    ...(options.standbyAfterMs === undefined ? {} : { standbyAfterMs: options.standbyAfterMs }),
    onSpawned: () => undefined,
    onExit: (_id, exit) => exits.push(exit),
    onLine: () => undefined,
  });
  const spec: ProcessSpec = {
    id: "t.process-p",
    module: "t",
    name: "p",
    argv: [process.execPath, "main.cjs"],
    env: {},
    cwd,
    marker: { name: "MESH_HOST_PROCESS", value: "test:t.process-p" },
    ...options.spec,
  };
  return { root, supervisor, spec, exits };
}
