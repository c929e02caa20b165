/**
 * A mesh from `mesh up --demo` (or without the examples) in a process group of its own, for the fault suite and the
 * tests that kill parts of a real mesh: start it, find its processes by what they are, call its
 * tools, take a snapshot of what it holds, and stop it leaving nothing behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { KvBucket, MeshBus, request } from "@mesh/bus";
import { deadline, reapWithMe } from "@mesh/bus/testing";
import { LaunchEnv } from "@mesh/host";
import {
  Bucket,
  Env,
  MeshPart,
  nodeModuleKey,
  processResourceId,
  toolSubject,
} from "@mesh/protocol";
import { MESH_MAIN } from "./run-mesh.js";

export interface UpReport {
  readonly bus: {
    readonly url: string;
    readonly pid: number;
    /** Every server, in order (one, or each of a cluster's). */
    readonly servers: readonly { readonly url: string; readonly pid: number }[];
  };
  readonly processes: Readonly<Record<string, number>>;
  readonly credentials: { readonly operator: string };
}

/** What a process of the mesh is, found from its command line and environment. */
export type MeshProcessKind =
  | "up"
  | "nats-server"
  | "controller"
  | "indexer"
  | "builder"
  | "assigner"
  | "host"
  /** What runs the host and hands the node from one host build to the next (decision 0200). */
  | "host-launcher"
  | "runtime"
  /** The runtime's standby, booted ahead to take over when the runtime dies: not a second copy. */
  | "runtime-standby"
  | "counter"
  | "module";

export interface MeshProcess {
  readonly pid: number;
  readonly kind: MeshProcessKind;
}

/** The modules `mesh up --demo` runs and waits for. */
export const DEMO_HEALTHY = ["node-tools", "hello", "counter", "board"] as const;

export class DemoMesh {
  readonly root: string;
  readonly port: number;
  readonly node: string;
  #child: ChildProcess | undefined;
  #exit: Promise<number | null> = Promise.resolve(null);
  #bus: MeshBus | undefined;
  #report: UpReport | undefined;

  readonly #demo: boolean;
  readonly #args: readonly string[];
  readonly #netns: string | undefined;

  /**
   * `demo: false` runs the mesh with only `node-tools`, as `mesh up` without `--demo` does;
   * `args` are more of `mesh up`'s options (`--cluster 3`); `netns` runs `mesh up` in that
   * network namespace (a fleet's control machine: fleet.ts).
   */
  constructor(options: {
    root: string;
    port: number;
    node: string;
    demo?: boolean;
    args?: readonly string[];
    netns?: string;
  }) {
    this.root = options.root;
    this.port = options.port;
    this.node = options.node;
    this.#demo = options.demo ?? true;
    this.#args = options.args ?? [];
    this.#netns = options.netns;
  }

  /** Starts `mesh up [--demo]` and resolves once it says the mesh (and the demo) is up. */
  async up(timeoutMs = 300_000): Promise<UpReport> {
    // `ip netns exec` execs: the pid is mesh up's.
    const [command, ...prefix] =
      this.#netns === undefined
        ? [process.execPath]
        : ["ip", "netns", "exec", this.#netns, process.execPath];
    const child = spawn(
      command ?? process.execPath,
      [
        ...prefix,
        MESH_MAIN,
        ...["up", ...(this.#demo ? ["--demo"] : []), "--json", "--root", this.root],
        // Port 0: none given (a foreign bus, `--bus`, has no port of the mesh's).
        ...(this.port === 0 ? [] : ["--port", String(this.port)]),
        ...["--node", this.node],
        ...this.#args,
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        env: { ...process.env, [Env.credential]: "" },
      },
    );
    this.#child = child;
    // Ctrl-C to its group, and everything under its root after, also when the test process is
    // killed before it can call stop().
    reapWithMe(child.pid, { signal: "SIGINT", root: this.root });
    this.#exit = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    let out = "";
    let err = "";
    child.stderr?.on("data", (chunk: Buffer) => (err = (err + chunk.toString()).slice(-20_000)));
    const report = new Promise<UpReport>((resolve, reject) => {
      child.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        try {
          const parsed = JSON.parse(out) as UpReport & { ok?: boolean };
          if (parsed.ok === false) reject(new Error(`mesh up failed: ${out}${err}`));
          else resolve(parsed);
        } catch {
          // not the whole document yet
        }
      });
      void this.#exit.then((code) =>
        reject(new Error(`mesh up exited ${String(code)}: ${out}${err}`)),
      );
    });
    this.#report = await deadline(report, timeoutMs, "mesh up --demo to be up");
    // After a group kill the operator's connection is still there, reconnecting to the new bus
    // on the same port, as any caller's would.
    this.#bus ??= await MeshBus.connectWithFile(this.#report.credentials.operator, {
      say: () => undefined,
    });
    return this.#report;
  }

  /** The operator's connection to the mesh. */
  get bus(): MeshBus {
    if (this.#bus === undefined) throw new Error("the demo mesh is not up");
    return this.#bus;
  }

  get upPid(): number | undefined {
    return this.#child?.pid;
  }

  /** kill -9 of `mesh up` and everything in its process group (module processes are not in it). */
  async killGroup(): Promise<void> {
    const pid = this.#child?.pid;
    if (pid !== undefined) signalGroup(pid, "SIGKILL");
    await this.#exit;
  }

  /** Ctrl-C to `mesh up`, then kill -9 of whatever of the root still runs. */
  async stop(): Promise<void> {
    await this.#bus?.close();
    this.#bus = undefined;
    const pid = this.#child?.pid;
    if (pid !== undefined) {
      signalGroup(pid, "SIGINT");
      await deadline(this.#exit, 60_000, "mesh up to stop").catch(() => undefined);
    }
    for (const left of await this.processes()) signal(left.pid, "SIGKILL");
  }

  /** Every process that belongs to this root, by what it is. */
  processes(): Promise<MeshProcess[]> {
    return rootProcesses(this.root);
  }

  /**
   * Where a process of the mesh says what it does: `mesh up`'s children in `logs/mesh/<kind>.log`;
   * delivery's parts, modules their host runs, on their stderr, `logs/mesh-<part>/<part>.stderr.log`.
   */
  logOf(kind: MeshProcessKind): string {
    const part = PARTS.find(([k]) => k === kind);
    return part === undefined
      ? join(this.root, "logs", "mesh", `${kind}.log`)
      : join(this.root, "logs", part[1], `${kind}.stderr.log`);
  }

  /** The pids of one kind of process. */
  async pidsOf(kind: MeshProcessKind): Promise<number[]> {
    return (await this.processes()).filter((p) => p.kind === kind).map((p) => p.pid);
  }

  /** Calls a tool on this node; its result, or undefined when it did not answer. */
  async call(module: string, tool: string, input: unknown, timeoutMs = 2_000): Promise<unknown> {
    try {
      return await request(this.bus, toolSubject(this.node, module, tool), input, { timeoutMs });
    } catch {
      return undefined;
    }
  }

  /** Whether each of `modules` is reported healthy on this node. */
  async healthy(modules: readonly string[] = DEMO_HEALTHY): Promise<boolean> {
    try {
      const have = await KvBucket.open(this.bus, Bucket.have);
      for (const module of modules) {
        const entry = await have.get(nodeModuleKey(this.node, module));
        if (entry?.value.health !== "healthy") return false;
      }
      return true;
    } catch {
      return false;
    }
  }

  /** counter's running total as its tool reads it. */
  async counterTotal(): Promise<number | undefined> {
    const reply = (await this.call("counter", "read", {})) as { total?: number } | undefined;
    return reply?.total;
  }
}

/**
 * A caller that keeps calling hello's tool, one call after another, counting what failed:
 * the constant load a fault is measured under.
 */
export class ConstantLoad {
  failed = 0;
  answered = 0;
  #stopped = false;
  readonly #running: Promise<void>;

  constructor(mesh: DemoMesh) {
    this.#running = (async () => {
      while (!this.#stopped) {
        const reply = await mesh.call("hello", "greet", { name: "Ada" });
        if (reply !== undefined) this.answered += 1;
        else {
          this.failed += 1;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    })();
  }

  async stop(): Promise<{ failed: number; answered: number }> {
    this.#stopped = true;
    await this.#running;
    return { failed: this.failed, answered: this.answered };
  }
}

export { until } from "./until.js";

/** Every process that belongs to `root` (its path in the command line or environment), by kind. */
export async function rootProcesses(root: string): Promise<MeshProcess[]> {
  const found: MeshProcess[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = (await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "")).split("\0");
    const env = (await readFile(`/proc/${entry}/environ`, "utf8").catch(() => "")).split("\0");
    const mine = cmdline.some((arg) => arg.includes(root)) || env.some((v) => v.includes(root));
    if (!mine) continue;
    let kind = kindOf(cmdline, env);
    // A standby that took over still shows the variables it was started with in /proc; it
    // serves once it has written a status file of its own.
    if (kind === "runtime-standby" && (await hasStatusFile(root, Number(entry)))) kind = "runtime";
    found.push({ pid: Number(entry), kind });
  }
  return found;
}

/** Whether the runtime with `pid` has written a status file (a standby writes none). */
async function hasStatusFile(root: string, pid: number): Promise<boolean> {
  const file = join(root, "run", `node-tools.${pid}.status.json`);
  return (await stat(file).catch(() => undefined)) !== undefined;
}

/** Delivery's parts, which the host runs as modules (decision 0190), by their process's kind. */
const PARTS = [
  ["indexer", MeshPart.indexer],
  ["builder", MeshPart.builder],
  ["assigner", MeshPart.assigner],
] as const;

function kindOf(cmdline: readonly string[], env: readonly string[]): MeshProcessKind {
  if (/nats-server/.test(cmdline[0] ?? "")) return "nats-server";
  if (env.some((v) => v === `${Env.runtimeStandby}=1`)) return "runtime-standby";
  if (env.some((v) => v.startsWith(`${Env.toolModules}=`))) return "runtime";
  // The host marks each process it starts with its resource's id (MESH_HOST_PROCESS=<tag>:<id>).
  for (const [kind, part] of PARTS) {
    const id = processResourceId(part, kind);
    if (env.some((v) => v.startsWith("MESH_HOST_PROCESS=") && v.endsWith(`:${id}`))) return kind;
  }
  // A host build a launcher runs: the CLI's own (`mesh host`, told it is launched) or one from the root.
  if (env.includes(`${LaunchEnv.launched}=1`)) return "host";
  for (const verb of ["controller", "host", "up"] as const) {
    if (cmdline[1]?.endsWith("main.js") !== true || cmdline[2] !== verb) continue;
    // `mesh host` is the launcher (the host it runs is told it is launched, above).
    return verb === "host" ? "host-launcher" : verb;
  }
  if (env.some((v) => v.startsWith(`${Env.brokerFile}=`) && v.includes("counter"))) {
    return "counter";
  }
  return "module";
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

function signalGroup(pid: number, name: NodeJS.Signals): void {
  signal(-pid, name);
}
