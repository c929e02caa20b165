/**
 * Simulated hosts for the rollout tests on a real bus: each node speaks as its own host (its
 * `hostGrant` credential), writing its presence heartbeat and its `mesh-have` report as a host
 * does. They run on a virtual clock the test moves, so a gate of 20 s holds without waiting
 * 20 s: the assigner reads time from the heartbeats (decision 0130). What they do not do: fetch
 * or run anything; each reports the build the assigner wants of it as its behaviour says, and,
 * as a host does, which value of the module's `greeting` it sees (`have.config`, decision 0131).
 * The module is hello unless another is named (`node-tools`, the runtime, rolls out the same).
 */
import { KvBucket, MeshBus } from "@mesh/bus";
import { fingerprintOf } from "@mesh/core";
import { Bucket, type ConfigValue, type Have } from "@mesh/protocol";
import type { AssignerBus } from "./test-assigner.js";
import { T0, presenceOf } from "./test-fleet.js";

/**
 * How a node runs build `build`, `ran` seconds after it was first given it, with the `greeting`
 * it sees since `seen` seconds.
 */
export type Behaviour = (
  node: string,
  build: string,
  ran: number,
  greeting: { readonly value: unknown; readonly seen: number },
) => Have["health"] | "silent";

export const healthyAlways: Behaviour = () => "healthy";

export class SimHosts {
  readonly nodes: readonly string[];
  /** The module each node runs and reports. */
  readonly module: string;
  /** Seconds since T0 on every node's clock. */
  clock = 0;
  readonly #hosts: Map<
    string,
    {
      bus: MeshBus;
      have: KvBucket<Have>;
      presence: KvBucket<unknown>;
      config: KvBucket<ConfigValue>;
    }
  >;
  /** The greeting each node's module sees: its fingerprint and since when (s). */
  readonly #greeting = new Map<string, { fingerprint: string; since: number }>();
  readonly #wants: KvBucket<{ build: string; rule: string }>;
  /** When each node was first given each build (seconds), and what it last reported. */
  readonly #given = new Map<string, number>();
  readonly #said = new Map<string, string>();
  /** When each node's health last changed (s). */
  readonly #healthSince = new Map<string, number>();
  /** Every build each node was ever wanted, from a watch of mesh-wants. */
  readonly seen = new Map<string, Set<string>>();
  readonly #stop = new AbortController();
  #watching: Promise<void> | undefined;

  private constructor(
    nodes: readonly string[],
    module: string,
    wants: KvBucket<{ build: string; rule: string }>,
  ) {
    this.nodes = nodes;
    this.module = module;
    this.#hosts = new Map();
    this.#wants = wants;
  }

  static async start(
    bus: AssignerBus,
    nodes: readonly string[],
    module = "hello",
  ): Promise<SimHosts> {
    const wants = (await KvBucket.open(bus.admin, Bucket.wants)) as unknown as KvBucket<{
      build: string;
      rule: string;
    }>;
    const sim = new SimHosts(nodes, module, wants);
    for (const node of nodes) {
      const host = await MeshBus.connect(bus.hostCredential(node));
      sim.#hosts.set(node, {
        bus: host,
        have: await KvBucket.open(host, Bucket.have),
        presence: await KvBucket.open(host, Bucket.presence),
        config: await KvBucket.open(host, Bucket.config),
      });
    }
    sim.#watching = sim.#watch();
    await sim.beat();
    return sim;
  }

  at(seconds = this.clock): string {
    return new Date(Date.parse(T0) + seconds * 1000).toISOString();
  }

  /** Every node's heartbeat at the clock. */
  async beat(): Promise<void> {
    for (const [node, h] of this.#hosts) await h.presence.put(node, presenceOf(node, this.at()));
  }

  /** What the assigner wants of the module on a node now. */
  async want(node: string): Promise<{ build: string; rule: string } | undefined> {
    return (await this.#wants.get(`${node}.${this.module}`))?.value;
  }

  /** The greeting the module sees on a node: its own value, else the mesh-wide one. */
  async greetingOn(node: string): Promise<unknown> {
    const config = this.#hosts.get(node)?.config;
    const own = await config?.get(`${this.module}.greeting.${node}`);
    return (own ?? (await config?.get(`${this.module}.greeting`)))?.value.value;
  }

  /** How long (s) a node's host has reported its module seeing `value` (0: not reported so). */
  seenFor(node: string, value: unknown): number {
    const seen = this.#greeting.get(node);
    return seen?.fingerprint === fingerprintOf(value) ? this.clock - seen.since : 0;
  }

  /** The nodes wanted a build now, sorted. */
  async wanting(build: string): Promise<string[]> {
    const out: string[] = [];
    for (const n of this.nodes) if ((await this.want(n))?.build === build) out.push(n);
    return out;
  }

  /** How long (s) a node has run a build it was given, or undefined. */
  ran(node: string, build: string): number | undefined {
    const given = this.#given.get(`${node}@${build}`);
    return given === undefined ? undefined : this.clock - given;
  }

  /**
   * Moves the clock, lets each node report the build it is wanted as `behaviour` says (only when
   * what it says changes: a host writes on change), then beats every node.
   */
  async step(seconds: number, behaviour: Behaviour = healthyAlways): Promise<void> {
    this.clock += seconds;
    for (const [node, h] of this.#hosts) {
      const want = await this.want(node);
      if (want === undefined) continue;
      const id = `${node}@${want.build}`;
      if (!this.#given.has(id)) this.#given.set(id, this.clock);
      const value = await this.greetingOn(node);
      const fingerprint = value === undefined ? undefined : fingerprintOf(value);
      const seen = this.#greeting.get(node);
      if (seen === undefined || seen.fingerprint !== (fingerprint ?? ""))
        this.#greeting.set(node, { fingerprint: fingerprint ?? "", since: this.clock });
      const greeting = this.#greeting.get(node) as { fingerprint: string; since: number };
      const health = behaviour(node, want.build, this.clock - (this.#given.get(id) ?? 0), {
        value,
        seen: this.clock - greeting.since,
      });
      const said = `${want.build} ${health} ${greeting.fingerprint}`;
      if (health === "silent" || this.#said.get(node) === said) continue;
      const sameHealth = this.#said.get(node)?.startsWith(`${want.build} ${health} `) === true;
      this.#said.set(node, said);
      if (!sameHealth) this.#healthSince.set(node, this.clock);
      await h.have.put(`${node}.${this.module}`, {
        build: want.build,
        fingerprint: "f",
        health,
        since: this.at(this.#healthSince.get(node)),
        restarts: 0,
        ...(health === "failing" ? { lastError: "exited with 1 at start" } : {}),
        config: {
          values: fingerprint === undefined ? {} : { greeting: fingerprint },
          since: this.at(greeting.since),
        },
      });
    }
    await this.beat();
  }

  async #watch(): Promise<void> {
    try {
      for await (const e of this.#wants.watch({ signal: this.#stop.signal })) {
        if (e.type !== "put") continue;
        const node = e.key.split(".")[0] as string;
        const set = this.seen.get(node) ?? new Set<string>();
        set.add(e.value.build);
        this.seen.set(node, set);
      }
    } catch {
      // Stopped.
    }
  }

  async close(): Promise<void> {
    // The watch ends with the signal, or with the admin's connection after the file's tests.
    this.#stop.abort();
    void this.#watching;
    for (const h of this.#hosts.values()) await h.bus.close();
  }
}
