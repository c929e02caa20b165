/**
 * The network a fleet on one machine runs on (decision 0140): a network namespace per member
 * (the control machine, each bus server, each node), each with one veth link to a bridge in a
 * namespace of the fleet's own (`<prefix>hub`), on an address of its own in 10.77.K.0/24. K is
 * claimed by creating the hub namespace (`ip netns add` fails when it exists), so two fleets on
 * one machine never share names or addresses. The operator (the process that made the fleet)
 * reaches it over one more link, `<prefix>op`, from the machine's own namespace.
 *
 * A partition is a link set down on the hub's side: the member keeps its address and its
 * processes, and hears nothing, as a machine whose cable was pulled. Everything is removed by
 * deleting the namespaces (a veth dies with either end); the reaper deletes them by the prefix
 * when the process that made them is gone, however it went.
 */
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { promisify } from "node:util";
import { reapNetnsWithMe } from "@mesh/bus/testing";

const run = promisify(execFile);

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

  /** Deletes every namespace of the fleet (and with them every link). Twice is harmless. */
  async remove(): Promise<void> {
    if (this.#removed) return;
    this.#removed = true;
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

/** Deletes every namespace whose name starts with `prefix`: members first, the hub last. */
export async function removeNetns(prefix: string): Promise<void> {
  const names = (await readdir("/run/netns").catch(() => [] as string[])).filter((n) =>
    n.startsWith(prefix),
  );
  names.sort((a, b) => Number(a.endsWith("hub")) - Number(b.endsWith("hub")));
  for (const name of names) await ip(["netns", "del", name]).catch(() => undefined);
}
