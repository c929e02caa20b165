/**
 * The network a fleet on one machine runs on (decision 0140): a network namespace per member
 * (the control machine, each bus server, each node), each with one veth link to a bridge in a
 * namespace of the fleet's own (`<prefix>hub`), on an address of its own in 10.77.K.0/24. K is
 * claimed by creating the hub namespace (`ip netns add` fails when it exists), so two fleets on
 * one machine never share names or addresses. The operator (the process that made the fleet)
 * reaches it over one more link, `<prefix>op`, from the machine's own namespace.
 *
 * A partition is a link set down on the hub's side: the member keeps its address and its
 * processes, and hears nothing, as a machine whose cable was pulled. A slow, lossy link
 * (`slow`, decision 0213) puts a wire of link-relay.py between the member's veth and the bridge
 * for the delay, and nft rules in the member's namespace for the loss. Everything is removed by
 * deleting the namespaces (a veth dies with either end) once the wires' processes are stopped;
 * the reaper stops those by pid and deletes the namespaces by the prefix when the process that
 * made them is gone, however it went.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { deadline, reapNetnsWithMe, reapWithMe } from "@mesh/bus/testing";

const run = promisify(execFile);
const RELAY = fileURLToPath(new URL("../../src/testing/link-relay.py", import.meta.url));
/** The nft table of a member's loss (in its own namespace). */
const LOSS_TABLE = "meshlink";

/** What a member's link adds to every frame that crosses it (decision 0213). */
export interface LinkQuality {
  /** The round trip added, in ms: half of it each way (0: none). */
  readonly delayMs: number;
  /** The share of packets dropped, in percent, each way (0: none). */
  readonly lossPercent: number;
}

/** Says what is wrong with a link quality, or undefined when it can be made. */
export function linkQualityProblem(quality: LinkQuality): string | undefined {
  const { delayMs, lossPercent } = quality;
  if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > 10_000) {
    return `--delay-ms takes a whole number of ms from 0 to 10000 (the round trip added), got ${delayMs}`;
  }
  if (!Number.isFinite(lossPercent) || lossPercent < 0 || lossPercent >= 100) {
    return `--loss takes a percentage from 0 to below 100 (each way), got ${lossPercent}`;
  }
  return undefined;
}

/** The third octet of the fleets' addresses is the fleet's own; the first two are these. */
const NET = "10.77";
const OPERATOR_HOST = 254;

export interface FleetMember {
  /** `c`, `s1`, `n12`: the member's name in the fleet, and its link's name in the hub. */
  readonly name: string;
  /** The member's namespace: `<prefix><name>`. */
  readonly netns: string;
  readonly address: string;
}

/** Runs `ip …`; a failure says the command and what ip said. */
export async function ip(args: readonly string[]): Promise<string> {
  try {
    return (await run("ip", [...args], { timeout: 30_000 })).stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(" ")} failed: ${(e.stderr ?? e.message).trim()}`, {
      cause: error,
    });
  }
}

/**
 * Says why namespaces cannot be made here (not root, no `ip`), or undefined when they can. A
 * test of the fleet fails with this, never skips: CI runs as root.
 */
export async function netnsUnavailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) {
    return `a fleet on one machine needs network namespaces, which only root can make (uid ${process.getuid?.() ?? "?"}); run it as root (CI does)`;
  }
  try {
    await ip(["netns", "list"]);
    return undefined;
  } catch (error) {
    return `a fleet needs iproute2's ip with network namespaces (${(error as Error).message})`;
  }
}

export class FleetNet {
  /** `mf<K>-`: every namespace of this fleet starts with it. */
  readonly prefix: string;
  /** K: the fleet's addresses are 10.77.K.x. */
  readonly subnet: number;
  readonly members = new Map<string, FleetMember>();
  /** The wires (link-relay.py) of the members whose link is slow, by member. */
  readonly #wires = new Map<string, ChildProcess>();
  readonly #slow = new Map<string, LinkQuality>();
  #removed = false;

  private constructor(subnet: number) {
    this.subnet = subnet;
    this.prefix = `mf${subnet}-`;
  }

  /** The hub namespace and its bridge, on a subnet no other fleet on this machine holds. */
  static async create(): Promise<FleetNet> {
    const unavailable = await netnsUnavailable();
    if (unavailable !== undefined) throw new Error(unavailable);
    const start = 1 + (process.pid % 254);
    for (let i = 0; i < 254; i++) {
      const subnet = 1 + ((start + i - 1) % 254);
      const net = new FleetNet(subnet);
      try {
        await ip(["netns", "add", net.hub]);
      } catch {
        continue; // another fleet holds this one
      }
      reapNetnsWithMe(net.prefix);
      await ip(["-n", net.hub, "link", "add", "br0", "type", "bridge"]);
      await ip(["-n", net.hub, "link", "set", "br0", "up"]);
      await net.#operatorLink();
      return net;
    }
    throw new Error(
      "every 10.77.K.0/24 of this machine is held by a fleet; remove stale ones (ip netns list)",
    );
  }

  get hub(): string {
    return `${this.prefix}hub`;
  }

  /** The operator's own address (in the machine's namespace). */
  get operatorAddress(): string {
    return `${NET}.${this.subnet}.${OPERATOR_HOST}`;
  }

  /** Adds a member on host number `host` (1–253) of the fleet's subnet. */
  async add(name: string, host: number): Promise<FleetMember> {
    const member: FleetMember = {
      name,
      netns: `${this.prefix}${name}`,
      address: `${NET}.${this.subnet}.${host}`,
    };
    await ip(["netns", "add", member.netns]);
    await ip([
      ...["link", "add", "eth0", "netns", member.netns, "type", "veth"],
      ...["peer", "name", name, "netns", this.hub],
    ]);
    await ip(["-n", this.hub, "link", "set", name, "master", "br0", "up"]);
    await ip(["-n", member.netns, "addr", "add", `${member.address}/24`, "dev", "eth0"]);
    await ip(["-n", member.netns, "link", "set", "eth0", "up"]);
    await ip(["-n", member.netns, "link", "set", "lo", "up"]);
    this.members.set(name, member);
    return member;
  }

  member(name: string): FleetMember {
    const found = this.members.get(name);
    if (found === undefined) throw new Error(`the fleet has no member ${name}`);
    return found;
  }

  /** Cuts the member off: its link to the hub goes down (its processes hear nothing). */
  async partition(name: string): Promise<void> {
    this.member(name);
    await ip(["-n", this.hub, "link", "set", name, "down"]);
  }

  /** Brings the member's link back. */
  async heal(name: string): Promise<void> {
    this.member(name);
    await ip(["-n", this.hub, "link", "set", name, "up"]);
  }

  /**
   * Makes the member's link slow and lossy (at once, also while it carries traffic): its veth
   * moves from the hub's bridge onto a bridge of its own (`<name>w`) with a TAP device, and
   * link-relay.py passes every frame between that TAP and another on the hub's bridge after
   * half the round trip, each way. The member keeps its address and dials what it dialled; a
   * partition still sets the same veth down. The loss is nft's, in the member's namespace: on
   * output and on input of its link (eth0; its loopback loses nothing), so each way loses its
   * share.
   */
  async slow(name: string, quality: LinkQuality): Promise<void> {
    const problem = linkQualityProblem(quality);
    if (problem !== undefined) throw new Error(problem);
    const member = this.member(name);
    await this.unslow(name);
    this.#slow.set(name, quality);
    if (quality.delayMs > 0) {
      const [wire, inner, outer] = [`${name}w`, `${name}a`, `${name}b`];
      await ip(["-n", this.hub, "link", "add", wire, "type", "bridge"]);
      await ip(["-n", this.hub, "link", "set", wire, "up"]);
      for (const tap of [inner, outer]) {
        await ip(["-n", this.hub, "tuntap", "add", "dev", tap, "mode", "tap"]);
      }
      await ip(["-n", this.hub, "link", "set", inner, "master", wire, "up"]);
      await ip(["-n", this.hub, "link", "set", outer, "master", "br0", "up"]);
      this.#wires.set(name, await startWire(this.hub, inner, outer, quality.delayMs / 2));
      await ip(["-n", this.hub, "link", "set", name, "master", wire]);
    }
    if (quality.lossPercent > 0) {
      const share = Math.round(quality.lossPercent * 100);
      const chain = (hook: string) =>
        `add chain inet ${LOSS_TABLE} ${hook} { type filter hook ${hook === "out" ? "output" : "input"} priority 0; }; ` +
        `add rule inet ${LOSS_TABLE} ${hook} ${hook === "out" ? "oifname" : "iifname"} eth0 numgen random mod 10000 < ${share} counter drop`;
      await nft(member.netns, `add table inet ${LOSS_TABLE}; ${chain("out")}; ${chain("in")}`);
    }
  }

  /** Gives the member its plain link back (nothing when it was not slow). */
  async unslow(name: string): Promise<void> {
    const quality = this.#slow.get(name);
    if (quality === undefined) return;
    this.#slow.delete(name);
    const wire = this.#wires.get(name);
    if (wire !== undefined) {
      this.#wires.delete(name);
      await ip(["-n", this.hub, "link", "set", name, "master", "br0"]);
      await stopWire(wire);
      for (const dev of [`${name}a`, `${name}b`, `${name}w`]) {
        await ip(["-n", this.hub, "link", "del", dev]);
      }
    }
    if (quality.lossPercent > 0) {
      await nft(this.member(name).netns, `delete table inet ${LOSS_TABLE}`);
    }
  }

  /** How slow the member's link is, when it is. */
  quality(name: string): LinkQuality | undefined {
    return this.#slow.get(name);
  }

  /** The packets the member's link dropped so far (both ways), as nft counted them. */
  async dropped(name: string): Promise<number> {
    if ((this.#slow.get(name)?.lossPercent ?? 0) === 0) return 0;
    const listed = await nft(this.member(name).netns, `list table inet ${LOSS_TABLE}`);
    return [...listed.matchAll(/counter packets (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  }

  /** Deletes every namespace of the fleet (and with them every link). Twice is harmless. */
  async remove(): Promise<void> {
    if (this.#removed) return;
    this.#removed = true;
    // A wire runs in the hub's namespace and would keep it (and its links) alive.
    for (const wire of this.#wires.values()) await stopWire(wire);
    this.#wires.clear();
    await removeNetns(this.prefix);
  }

  async #operatorLink(): Promise<void> {
    const link = `${this.prefix}op`;
    await ip(["link", "add", link, "type", "veth", "peer", "name", "op", "netns", this.hub]);
    await ip(["-n", this.hub, "link", "set", "op", "master", "br0", "up"]);
    await ip(["addr", "add", `${this.operatorAddress}/24`, "dev", link]);
    await ip(["link", "set", link, "up"]);
  }
}

/** Runs an nft script in a namespace; what it printed. */
async function nft(netns: string, script: string): Promise<string> {
  try {
    return (await run("ip", ["netns", "exec", netns, "nft", script], { timeout: 30_000 })).stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(
      `nft ${script} in ${netns} failed: ${(e.stderr ?? e.message).trim()} (a lossy link needs nftables: apt-get install -y nftables, as scripts/setup.sh does)`,
      { cause: error },
    );
  }
}

/** link-relay.py between two TAP devices of the hub, once it says it holds both. */
async function startWire(hub: string, inner: string, outer: string, eachWayMs: number) {
  const child = spawn(
    "ip",
    ["netns", "exec", hub, "python3", RELAY, inner, outer, String(eachWayMs)],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  reapWithMe(child.pid, { group: false, graceMs: 2_000 });
  let said = "";
  const ready = new Promise<void>((resolve, reject) => {
    const listen = (chunk: Buffer) => {
      said = (said + chunk.toString()).slice(-4_000);
      if (said.includes("ready")) resolve();
    };
    child.stdout.on("data", listen);
    child.stderr.on("data", listen);
    child.once("close", (code) => reject(new Error(`link-relay.py ended (${code}): ${said}`)));
  });
  try {
    await deadline(ready, 30_000, `the wire between ${inner} and ${outer} to start`);
  } catch (error) {
    await stopWire(child);
    throw error;
  }
  return child;
}

async function stopWire(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const ended = new Promise<void>((resolve) => child.once("close", () => resolve()));
  child.kill("SIGTERM");
  await deadline(ended, 10_000, "a link wire to stop").catch(() => child.kill("SIGKILL"));
}

/** Deletes every namespace whose name starts with `prefix`: members first, the hub last. */
export async function removeNetns(prefix: string): Promise<void> {
  const names = (await readdir("/run/netns").catch(() => [] as string[])).filter((n) =>
    n.startsWith(prefix),
  );
  names.sort((a, b) => Number(a.endsWith("hub")) - Number(b.endsWith("hub")));
  for (const name of names) await ip(["netns", "del", name]).catch(() => undefined);
}
