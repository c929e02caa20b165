/**
 * A fleet on one machine, for real (issue 23.1, decision 0140): every bus server and every node
 * on a network stack of its own (fleet-net.ts), and in each the command a user types on a real
 * machine — `mesh up --demo --listen … [--cluster 3 --server-netns …]` on the control machine,
 * `mesh join tls://<address>:4222 --token T --node nK --root <its folder>` on each node — nothing
 * shortcut. The operator (this process) reaches the bus over a link of its own, with the
 * operator's credential `mesh up` wrote.
 *
 * Everything it made goes when it stops, and also when it is killed: its processes by pid and by
 * the folder they name, its namespaces by their prefix (the reaper, reaper.ts).
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, request } from "@mesh/bus";
import { deadline, processesNaming, reapWithMe } from "@mesh/bus/testing";
import type { CallerCounts } from "./fleet-caller.js";
import { Bucket, nodeModuleKey, toolSubject } from "@mesh/protocol";
import { DEMO_HEALTHY, DemoMesh } from "./demo-mesh.js";
import { FleetNet, linkQualityProblem, type FleetMember, type LinkQuality } from "./fleet-net.js";
import { runMesh, startMesh, type MeshProcess } from "./run-mesh.js";
import { until } from "./until.js";

/** The bus's client port on every server's own address. */
export const FLEET_PORT = 4222;
const CALLER_MAIN = fileURLToPath(new URL("./fleet-caller.js", import.meta.url));

/** A caller running on a node of the fleet (fleet-caller.ts). */
export interface FleetCaller {
  /** What it counted by its last report (zeros before the first). */
  counts(): CallerCounts;
  /** Resolves once it has answered `n` more calls than now. */
  answers(n: number, ms: number): Promise<void>;
  /** Stops it; what it counted in all. */
  stop(): Promise<CallerCounts>;
}

/** The most nodes one fleet's /24 holds (hosts .101 to .250). */
export const MAX_FLEET_NODES = 150;

export interface FleetOptions {
  readonly nodes: number;
  /** 1, or 3 for a cluster (default 3). */
  readonly servers?: number;
  /** How long the mesh and each node may take to come up (default 5 min). */
  readonly upTimeoutMs?: number;
  /** Every node's link made slow and lossy before it joins (decision 0213). */
  readonly link?: LinkQuality;
  readonly say?: (line: string) => void;
}

export interface FleetNode {
  readonly name: string;
  readonly member: FleetMember;
  /** The node's own folder (`--root` of its `mesh join`). */
  readonly root: string;
  /** Its `mesh join`, which runs the node's host in the foreground. */
  join: MeshProcess;
}

export class Fleet {
  readonly net: FleetNet;
  /** Where every member keeps its folder. */
  readonly dir: string;
  /** The control machine's `mesh up`. */
  readonly control: DemoMesh;
  readonly servers: readonly FleetMember[];
  readonly nodes: readonly FleetNode[];
  /** From the first node's `mesh join` until every node ran the demo healthy. */
  convergedMs = 0;
  #stopping: Promise<void> | undefined;
  readonly #say: (line: string) => void;

  private constructor(init: {
    net: FleetNet;
    dir: string;
    control: DemoMesh;
    servers: FleetMember[];
    nodes: FleetNode[];
    say: (line: string) => void;
  }) {
    this.net = init.net;
    this.dir = init.dir;
    this.control = init.control;
    this.servers = init.servers;
    this.nodes = init.nodes;
    this.#say = init.say;
  }

  /** Makes the network, starts the control plane, joins every node and waits until all are healthy. */
  static async start(options: FleetOptions): Promise<Fleet> {
    const say = options.say ?? (() => undefined);
    const count = options.servers ?? 3;
    if (!Number.isInteger(options.nodes) || options.nodes < 1 || options.nodes > MAX_FLEET_NODES) {
      throw new Error(`--nodes takes 1 to ${MAX_FLEET_NODES}, got ${options.nodes}`);
    }
    if (count !== 1 && (count < 3 || count > 7)) {
      throw new Error(`--servers takes 1, or 3 to 7 for a cluster, got ${count}`);
    }
    const problem = options.link === undefined ? undefined : linkQualityProblem(options.link);
    if (problem !== undefined) throw new Error(problem);
    const net = await FleetNet.create();
    const dir = await mkdtemp(join(tmpdir(), `mesh-fleet-${net.subnet}-`));
    const timeout = options.upTimeoutMs ?? 300_000;
    const nodes: FleetNode[] = [];
    let fleet: Fleet | undefined;
    try {
      say(
        `network ${net.prefix}*: 10.77.${net.subnet}.0/24, the operator at ${net.operatorAddress}`,
      );
      const control = await net.add("c", 1);
      const servers: FleetMember[] = [];
      for (let i = 1; i <= count; i++) servers.push(await net.add(`s${i}`, 10 + i));
      const members: FleetMember[] = [];
      for (let j = 1; j <= options.nodes; j++) members.push(await net.add(`n${j}`, 100 + j));
      if (options.link !== undefined) {
        for (const member of members) await net.slow(member.name, options.link);
        say(
          `every node's link adds ${options.link.delayMs} ms round trip and drops ${options.link.lossPercent}% each way`,
        );
      }
      const mesh = new DemoMesh({
        root: join(dir, "c"),
        port: FLEET_PORT,
        node: "c",
        netns: control.netns,
        args: [
          ...(count === 1 ? [] : ["--cluster", String(count)]),
          ...["--listen", servers.map((s) => s.address).join(",")],
          ...["--server-netns", servers.map((s) => s.netns).join(",")],
        ],
      });
      say(
        `mesh up on c (${control.address}) with ${count === 1 ? "one server" : `${count} servers`} at ${servers.map((s) => s.address).join(", ")}`,
      );
      await mesh.up(timeout);
      fleet = new Fleet({ net, dir, control: mesh, servers, nodes, say });
      const joinedFrom = Date.now();
      for (const member of members) nodes.push(await fleet.#join(member));
      say(
        `${nodes.length} nodes joined; waiting until each runs ${DEMO_HEALTHY.join(", ")} healthy`,
      );
      for (const node of nodes) {
        await until(
          async () => (await fleet?.healthy(node.name)) || undefined,
          timeout,
          `${node.name} to run the demo healthy`,
          { explain: () => fleet?.account(node.name) ?? Promise.resolve("") },
        );
      }
      fleet.convergedMs = Date.now() - joinedFrom;
      return fleet;
    } catch (error) {
      if (fleet !== undefined) await fleet.stop();
      else {
        await net.remove();
        await rm(dir, { recursive: true, force: true });
      }
      throw error;
    }
  }

  /** The operator's first server url, as `mesh join-token` prints it. */
  get busUrl(): string {
    const first = this.servers[0];
    return `tls://${first?.address ?? ""}:${FLEET_PORT}`;
  }

  node(name: string): FleetNode {
    const found = this.nodes.find((n) => n.name === name);
    if (found === undefined) throw new Error(`the fleet has no node ${name}`);
    return found;
  }

  /** A one-time join token, as the operator asks for one. */
  async joinToken(extra: readonly string[] = []): Promise<string> {
    const made = await runMesh(["join-token", "--root", this.control.root, "--json", ...extra]);
    if (made.code !== 0) throw new Error(`mesh join-token failed: ${made.stdout}${made.stderr}`);
    return (JSON.parse(made.stdout) as { token: string }).token;
  }

  /** `mesh join` in a member's namespace, as the user types it; resolves once it says it runs. */
  async #join(member: FleetMember): Promise<FleetNode> {
    const root = join(this.dir, member.name);
    const token = await this.joinToken();
    const joined = startMesh(
      [...["join", this.busUrl, "--token", token, "--node", member.name, "--root", root], "--json"],
      { netns: member.netns },
    );
    await joined.stdoutWhen(
      (out) => out.includes('"running": true') || out.includes('"running":true'),
      120_000,
    );
    this.#say(`${member.name} (${member.address}) joined`);
    return { name: member.name, member, root, join: joined };
  }

  /**
   * Starts a caller in `on`'s namespace, as the operator, calling `calls` (`n2:hello/greet`) one
   * after another for as long as it runs.
   */
  caller(
    on: string,
    calls: readonly string[],
    options: { leaderReads?: boolean } = {},
  ): FleetCaller {
    const member = on === "c" ? this.net.member("c") : this.node(on).member;
    const credential = join(this.control.root, "credentials", "operator.json");
    const child = spawn(
      "ip",
      [
        ...["netns", "exec", member.netns, process.execPath, CALLER_MAIN],
        ...["--credential", credential, "--calls", calls.join(",")],
        ...(options.leaderReads === true
          ? ["--leader-credential", join(this.control.root, "credentials", "controller.json")]
          : []),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    reapWithMe(child.pid, { group: false, graceMs: 5_000 });
    let last: CallerCounts = {
      answered: 0,
      failed: 0,
      failedBy: {},
      counterMax: 0,
      counterBack: 0,
      acknowledged: 0,
      lostWrites: 0,
      staleReads: 0,
      stopped: false,
    };
    let err = "";
    const waiters = new Set<() => void>();
    let buffered = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        try {
          last = JSON.parse(line) as CallerCounts;
        } catch {
          // not a report
        }
      }
      for (const w of waiters) w();
    });
    child.stderr
      .setEncoding("utf8")
      .on("data", (chunk: string) => (err = (err + chunk).slice(-4_000)));
    const ended = new Promise<void>((resolve) => child.once("close", () => resolve()));
    return {
      counts: () => last,
      answers: (n, ms) => {
        const target = last.answered + n;
        return deadline(
          new Promise<void>((resolve, reject) => {
            const check = () => {
              if (last.answered >= target) resolve();
              else if (child.exitCode !== null)
                reject(new Error(`the caller on ${on} ended: ${err}`));
              else return;
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          }),
          ms,
          `${n} calls answered by the caller on ${on}`,
        );
      },
      stop: async () => {
        child.kill("SIGTERM");
        await deadline(ended, 30_000, `the caller on ${on} to stop`);
        if (!last.stopped) throw new Error(`the caller on ${on} did not report its end: ${err}`);
        return last;
      },
    };
  }

  /** Whether `modules` are all healthy on the node, as its have says. */
  async healthy(node: string, modules: readonly string[] = DEMO_HEALTHY): Promise<boolean> {
    try {
      const have = await KvBucket.open(this.control.bus, Bucket.have);
      for (const module of modules) {
        const entry = await have.get(nodeModuleKey(node, module));
        if (entry?.value.health !== "healthy") return false;
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Calls a tool on a node, as the operator; its answer, or undefined when none came. */
  async call(node: string, module: string, tool: string, input: unknown, timeoutMs = 2_000) {
    try {
      return await request(this.control.bus, toolSubject(node, module, tool), input, { timeoutMs });
    } catch {
      return undefined;
    }
  }

  /** Every process of a node (its folder is in its command line or environment), by pid. */
  async pidsOf(node: string): Promise<number[]> {
    return processesNaming(this.node(node).root);
  }

  /** The pid of a server's nats-server now (its keeper starts a new one when it dies). */
  async serverPid(index: number): Promise<number | undefined> {
    const [pid] = await processesNaming(
      join(this.control.root, "bus", `s${index + 1}`, "nats-server.conf"),
    );
    return pid;
  }

  /**
   * Which server the node's host is connected to now (index into `servers`), read from the
   * host's own sockets in its namespace; undefined while it is connected to none.
   */
  async connectedServer(node: string): Promise<number | undefined> {
    // The host is the join's child since the join hands the node to a host build (decision
    // 0200); the join's own sockets are read too, for a join that runs the host itself.
    const pid = this.node(node).join.pid;
    const remotes: string[] = [];
    for (const p of [pid, ...(await childrenOf(pid))])
      remotes.push(...(await establishedRemotes(p)));
    const index = this.servers.findIndex((s) => remotes.includes(`${s.address}:${FLEET_PORT}`));
    return index < 0 ? undefined : index;
  }

  /** `mesh status` and the node's host log tail, for a failure's message. */
  async account(node?: string): Promise<string> {
    const status = await runMesh(["status", "--root", this.control.root]).catch(() => undefined);
    const host = node === undefined ? "" : this.node(node).join.stderr().slice(-3_000);
    return `${status?.stdout ?? ""}${status?.stderr ?? ""}${host === "" ? "" : `\n--- ${node}'s host ---\n${host}`}`;
  }

  /**
   * Stops every node's host and its processes, then the control plane, then the network.
   * Stopping twice is harmless.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    for (const node of this.nodes) signal(node.join.pid, "SIGTERM");
    for (const node of this.nodes) await node.join.ended(30_000).catch(() => undefined);
    for (const pid of await processesNaming(this.dir)) {
      if (pid !== this.control.upPid) signal(pid, "SIGKILL");
    }
    await this.control.stop();
    for (const pid of await processesNaming(this.dir)) signal(pid, "SIGKILL");
    await this.net.remove();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** The pids of a process's children. */
async function childrenOf(pid: number): Promise<number[]> {
  const listed = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "");
  return listed
    .split(/\s+/)
    .filter((p) => p !== "")
    .map(Number);
}

/** `a.b.c.d:port` of every established TCP connection of process `pid`. */
async function establishedRemotes(pid: number): Promise<string[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    const match = /^socket:\[(\d+)\]$/.exec(link);
    if (match?.[1] !== undefined) inodes.add(match[1]);
  }
  const table = await readFile(`/proc/${pid}/net/tcp`, "utf8").catch(() => "");
  const out: string[] = [];
  for (const line of table.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    const [remote, state, inode] = [f[2], f[3], f[9]];
    if (remote === undefined || state !== "01" || inode === undefined || !inodes.has(inode))
      continue;
    const [hex, port] = remote.split(":");
    if (hex === undefined || port === undefined) continue;
    const octets = [0, 2, 4, 6].map((i) => parseInt(hex.slice(i, i + 2), 16)).reverse();
    out.push(`${octets.join(".")}:${parseInt(port, 16)}`);
  }
  return out;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}
