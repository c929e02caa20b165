/**
 * The controller process: it watches wants, manifests, presence, keeps and secrets; for each node
 * whose inputs moved it composes with core's `compose`, issues the bus users the composition
 * implies (the broker), seals the node's credentials and secrets to its key, and writes
 * `mesh-composed.<node>` when, and only when, the composition changed. It also answers joins and
 * the operator's asks for join tokens and secrets.
 *
 * A reconciler keyed by node, one pass per burst (`reconcileBurst`): the fleet feed's sources
 * (fleet-feed.ts) feed each change into the Fleet index, whose moved nodes are the keys; a pass
 * takes a burst of them, stages their users, reloads the bus once for all of them, then writes
 * their compositions. A pass is also asked for without a node (`PASS`): by the endpoints when the
 * users changed, and after the time a credential is due to be renewed or revoked. A refusal writes nothing for that node (what it
 * runs stays) and says a condition. Handlers that change users (joins, tokens: endpoints.ts) take
 * the same lock, so the users list is never written by two at once.
 */
import { join } from "node:path";
import {
  Bucket,
  MESH_VERSION,
  Principal,
  hostCredentialContext,
  joinUser,
  type Composed,
  type Resource,
  type SealedSecret,
} from "@mesh/protocol";
import { fingerprintOf } from "@mesh/core";
import { KvBucket, reconciler, sayCondition, serve } from "@mesh/bus";
import type { MeshBus, Reconciler, SayCondition, Served } from "@mesh/bus";
import { DaemonLife, Lifecycle, type BackoffPolicy, type RunOptions } from "@mesh/kit";
import { Broker, hostPrincipal, sharedLoginOf } from "./broker.js";
import { ensureHost, holderOf, needContent, sealedHostCredential } from "./need-content.js";
import { withRenewedCredentials } from "./need-content.js";
import { ensureNodeStateBuckets } from "./state-buckets.js";
import type { NeedSources } from "./need-content.js";
import { revocationPusher, type RevocationPusher } from "./revocation-pusher.js";
import { conditionEndpoints } from "./condition-endpoints.js";
import { secretEndpoints } from "./secret-endpoints.js";
import { Fleet } from "./fleet.js";
import { feedFleet, fleetSources, type FleetSources } from "./fleet-feed.js";
import { ControllerFiles, type ControllerOptions, type PassReport } from "./controller-options.js";
import { userEndpoints, type EndpointContext } from "./endpoints.js";
import { JoinTokens } from "./join-tokens.js";
import { DEFAULT_ARTIFACT_STORE, planNode, type NodePlan, type NodeRefusal } from "./node-plan.js";
import { SealCache } from "./seal-cache.js";
import { Vault } from "./vault.js";

export { ControllerFiles, type ControllerOptions, type PassReport } from "./controller-options.js";

/** A pass asked for though no node moved: the users changed, or a credential is due. */
const PASS = Symbol("a pass");
/** What the controller reconciles: a node, or a pass for the users alone. */
type ControllerKey = string | typeof PASS;

/** The reconciler's per-key backoff; never used: a pass that throws fails the run (`failOnError`). */
const PASS_RETRY: BackoffPolicy = { initialMs: 1_000, maxMs: 30_000 };

export class Controller implements AsyncDisposable {
  readonly fleet = new Fleet();
  readonly broker: Broker;
  readonly #options: ControllerOptions;
  /** Accounts mode: pushes the revocations beside the passes (revocation-pusher.ts). */
  readonly #pusher: RevocationPusher | undefined;
  readonly #bus: MeshBus;
  readonly #vault: Vault;
  readonly #tokens: JoinTokens;
  readonly #seals: SealCache;
  readonly #composed: KvBucket<Composed>;
  readonly #secretsBucket: KvBucket<SealedSecret>;
  readonly #secrets = new Map<string, SealedSecret>();
  /** State buckets known to exist, so each is made (or found) once per controller run. */
  readonly #stateBuckets = new Set<string>();
  /** The fingerprint last written (or found) per node, so an unchanged one is not rewritten. */
  readonly #written = new Map<string, string>();
  /** The refusal last said per node, so a condition is said once per change. */
  readonly #refusedSaid = new Map<string, string>();
  readonly #problemsSaid = new Map<string, string>();
  readonly #stop = new AbortController();
  readonly #passListeners = new Set<(report: PassReport) => void>();
  readonly #life: DaemonLife;
  #lock: Promise<unknown> = Promise.resolve();
  #served: Served | undefined;
  #composer: Reconciler<FleetSources, ControllerKey> | undefined;
  #first = true;
  /** Counters: how many compositions were written, how many passes ran. */
  composedWrites = 0;
  passes = 0;

  private constructor(init: {
    options: ControllerOptions;
    vault: Vault;
    broker: Broker;
    pusher: RevocationPusher | undefined;
    tokens: JoinTokens;
    composed: KvBucket<Composed>;
    secrets: KvBucket<SealedSecret>;
  }) {
    this.#options = init.options;
    this.#bus = init.options.bus;
    this.#vault = init.vault;
    this.broker = init.broker;
    this.#pusher = init.pusher;
    this.#tokens = init.tokens;
    this.#composed = init.composed;
    this.#secretsBucket = init.secrets;
    this.#seals = new SealCache({ dir: join(init.options.dir, ControllerFiles.sealed) });
    this.#life = new DaemonLife({
      name: "controller",
      ...(init.options.log === undefined ? {} : { log: init.options.log }),
    });
  }

  static async create(options: ControllerOptions): Promise<Controller> {
    const { bus, dir } = options;
    const vault = await Vault.open(join(dir, ControllerFiles.vaultKey));
    const credential = bus.credential;
    const pusher = revocationPusher(options);
    const broker = await Broker.open({
      dir,
      vault,
      ...(options.accounts === undefined
        ? {
            ...(options.sink === undefined ? {} : { sink: options.sink }),
            ...(options.staticUsers === undefined ? {} : { staticUsers: options.staticUsers }),
          }
        : {
            accounts: options.accounts,
            ...(pusher === undefined ? {} : { pusher }),
            ...(options.credentialLifetimeMs === undefined
              ? {}
              : { credentialLifetimeMs: options.credentialLifetimeMs }),
          }),
      servers: options.servers ?? credential.servers,
      ...(options.sharedLogin === true ? { shared: sharedLoginOf(credential) } : {}),
      ...(credential.fingerprint === undefined ? {} : { fingerprint: credential.fingerprint }),
      ...(credential.ca === undefined ? {} : { ca: credential.ca }),
      grants: await KvBucket.open(bus, Bucket.grants),
      ...(options.now === undefined ? {} : { now: options.now }),
    });
    return new Controller({
      options,
      vault,
      broker,
      pusher,
      tokens: await JoinTokens.open(dir),
      composed: await KvBucket.open(bus, Bucket.composed),
      secrets: await KvBucket.open(bus, Bucket.secrets),
    });
  }

  get state(): Lifecycle {
    return this.#life.state;
  }

  /** Called after every pass (tests wait on this instead of sleeping). */
  onPass(listener: (report: PassReport) => void): () => void {
    this.#passListeners.add(listener);
    return () => this.#passListeners.delete(listener);
  }

  /**
   * Runs until the signal aborts or stop(): starts the watches and the endpoints, makes a first pass once every watch
   * has handed what stands, then one pass per burst of changes. Resolves when stopped; rejects
   * (state failed) when it cannot go on.
   */
  run(options: RunOptions): Promise<void> {
    const signal = AbortSignal.any([options.signal, this.#stop.signal]);
    return this.#life.run({ signal }, () => this.#run(signal));
  }

  #readyResolve: (() => void) | undefined;
  /** Resolves once the first pass is done (every watch had handed what stands). */
  readonly ready: Promise<void> = new Promise((resolve) => {
    this.#readyResolve = resolve;
  });

  async #run(signal: AbortSignal): Promise<void> {
    const log = this.#options.log ?? (() => undefined);
    // Revocations a controller kept but stopped before pushing go to the bus now.
    this.#pusher?.pushKept();
    try {
      const sources = await fleetSources({
        bus: this.#bus,
        secrets: this.#secretsBucket,
        secretValues: this.#secrets,
      });
      this.#served = await serve(this.#bus, {
        name: "mesh-controller",
        version: MESH_VERSION,
        description: "joins, join tokens, mcp credentials, secrets and resolving conditions",
        endpoints: [
          ...userEndpoints(() => this.#context()),
          ...secretEndpoints({
            bucket: this.#secretsBucket,
            vault: this.#vault,
            now: () => this.#now(),
          }),
          ...conditionEndpoints({ bus: this.#bus, now: () => this.#now() }),
        ],
        onRejected: (why, subject) => log(`controller: rejected a message on ${subject}: ${why}`),
        onInternalError: (error, subject) =>
          log(`controller: ${subject} failed: ${String((error as Error).stack ?? error)}`),
      });
      this.#composer = reconciler<FleetSources, ControllerKey>({
        name: "passes",
        sources,
        log: (line) => log(`controller: ${line}`),
        retry: PASS_RETRY,
        // A pass the bus refused (a reload, a write) stops the controller: its supervisor starts
        // it again, and the users list and compositions are read afresh.
        failOnError: true,
        onChange: (change) => feedFleet({ fleet: this.fleet, log }, change),
        // The Fleet index names the nodes each change moves.
        keysOf: () => this.fleet.takeDirty(),
        // Every node that stands is composed once at start (fingerprints decide what is written),
        // and a first pass is made with no node at all: it reloads the users list.
        allKeys: () => [PASS, ...this.fleet.nodes(), ...this.fleet.takeDirty()],
        onReady: () => {
          this.#life.set(Lifecycle.running);
          // And the bus gets the full users list once, whatever it was started with.
          this.broker.requireReload();
        },
        reconcileBurst: (keys, context) => this.#burst(keys, context.signal),
      });
      // A bucket lost for good fails the run: the controller's supervisor starts it again.
      await this.#composer.run({ signal });
    } catch (error) {
      if (!signal.aborted) log(`controller: failed: ${String((error as Error).stack ?? error)}`);
      throw error;
    } finally {
      await this.#served?.stop().catch(() => undefined);
      await this.#seals.flush().catch(() => undefined);
      this.#pusher?.close();
    }
  }

  /** One pass over a burst of moved nodes; then the next due credential asks for one. */
  async #burst(keys: readonly ControllerKey[], signal: AbortSignal): Promise<void> {
    const moved = keys.filter((key): key is string => key !== PASS);
    await this.#exclusive(() => this.#pass(moved, signal));
    if (this.#first) {
      this.#first = false;
      this.#readyResolve?.();
    }
    // A superseded credential due to be revoked, or one due to be renewed, asks for a pass too.
    const due = this.broker.nextDueAt();
    if (due !== undefined) this.#composer?.enqueue(PASS, Math.max(0, due - Date.now()) + 50);
  }

  /** Stops after the pass in progress; resolves when stopped. Calling it twice is harmless. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#life.finished();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  // --- watches -------------------------------------------------------------------------------

  #poke(): void {
    this.#composer?.enqueue(PASS);
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(fn);
    this.#lock = run.catch(() => undefined);
    return run;
  }

  // --- passes --------------------------------------------------------------------------------

  async #pass(moved: readonly string[], signal: AbortSignal): Promise<void> {
    // Renewed credentials reach their holders in their nodes' compositions; a node touched (an
    // endpoint renewed its credential) is composed too.
    const renewed = await this.broker.renewDue();
    const nodes = [...new Set([...moved, ...renewed, ...this.fleet.takeDirty()])].sort();
    const now = this.#now();
    // Join users of spent tokens go with this pass's reload.
    for (const id of this.#tokens.takeSpent(now)) this.broker.revoke(joinUser(id));
    if (nodes.length === 0 && !this.broker.pending) return;
    const started = performance.now();
    const context = {
      servers: this.#options.servers ?? this.#bus.credential.servers,
      artifactStore: this.#options.artifactStore ?? DEFAULT_ARTIFACT_STORE,
      ownerStates: (m: string) => this.fleet.ownerStates(m),
    };
    const planned: Extract<NodePlan, { ok: true }>[] = [];
    const refused: string[] = [];
    for (const node of nodes) {
      let plan: NodePlan;
      try {
        plan = planNode(this.fleet.inputsOf(node), context);
      } catch (error) {
        plan = {
          ok: false,
          node,
          refusals: [
            {
              code: "plan-failed",
              reason: `planning ${node} failed: ${String((error as Error).message)}`,
              fix: "this is a bug of the controller: report it with the controller's log",
            },
          ],
        };
      }
      if (!plan.ok) {
        if (this.fleet.inputsOf(node).wanted.size === 0) {
          // A node that left (no wants, no presence): its users go, and nothing is said.
          this.#revokeNode(node, new Set());
          continue;
        }
        refused.push(node);
        await this.#sayRefused(node, plan.refusals, signal);
        continue;
      }
      const keep = new Set<string>();
      for (const p of plan.principals) {
        await this.broker.ensure(p);
        keep.add(p.user);
      }
      this.#revokeNode(node, keep);
      if (this.broker.get(hostPrincipal(node).user) !== undefined)
        await ensureHost(this.broker, node);
      this.#sayProblems(node, plan);
      planned.push(plan);
    }
    // The states the planned nodes' modules keep exist before anything that keeps them starts.
    const { log } = this.#options;
    const wanted = planned.map((p) => this.fleet.inputsOf(p.node));
    await ensureNodeStateBuckets({ bus: this.#bus, wanted, made: this.#stateBuckets, log, signal });
    // One reload for every node of the pass, before any credential reaches a node.
    const reloaded = await this.broker.commit({ signal });
    const written: string[] = [];
    for (const plan of planned) {
      if (await this.#write(plan, signal)) written.push(plan.node);
      await this.#sayComposed(plan.node, signal);
    }
    for (const node of refused) await this.#renewRefused(node, signal);
    await this.#seals.flush();
    await this.#tokens.prune(now);
    this.passes += 1;
    const report: PassReport = { nodes, written, refused, reloaded };
    this.#options.log?.(
      `controller: pass ${this.passes}: ${nodes.length} node(s), ${written.length} written, ${refused.length} refused${reloaded ? this.broker.commitNote : ""} in ${Math.round(performance.now() - started)} ms`,
    );
    for (const listener of this.#passListeners) listener(report);
  }

  /** A refused node keeps what it runs, and its credentials renewed (need-content.ts). */
  async #renewRefused(node: string, signal: AbortSignal): Promise<void> {
    const presence = this.fleet.presenceOf(node);
    const kept = (await this.#composed.get(node, { signal }))?.value;
    if (presence === undefined || kept === undefined || !this.broker.renews) return;
    const { publicKey } = presence;
    const seals = this.#seals;
    const value = await withRenewedCredentials(kept, { broker: this.broker, seals, publicKey });
    if (value === undefined) return;
    await this.#composed.put(node, value, { signal });
    this.#written.set(node, value.fingerprint);
  }

  /** Revokes the runtime and module users of `node` that are not in `keep`. */
  #revokeNode(node: string, keep: ReadonlySet<string>): void {
    for (const u of this.broker.usersOf(node)) {
      if ((u.kind === "runtime" || u.kind === "module") && !keep.has(u.user)) {
        this.broker.revoke(u.user);
      }
    }
  }

  /** Seals the plan's needs and writes the composition when its fingerprint moved. */
  async #write(plan: Extract<NodePlan, { ok: true }>, signal: AbortSignal): Promise<boolean> {
    const { node } = plan;
    const presence = this.fleet.presenceOf(node);
    if (presence === undefined) return false;
    const resources: Resource[] = [];
    const needs = new Set<string>();
    for (const r of plan.resources) {
      if (r.type !== "need") {
        resources.push(r);
        continue;
      }
      needs.add(r.id);
      const plaintext = needContent(this.#needs(), node, r);
      if (plaintext === undefined) {
        resources.push(r);
        continue;
      }
      const { publicKey } = presence;
      const sealed = await this.#seals.sealFor({ node, needId: r.id, publicKey, plaintext });
      // The key a credential logs in with: a renewal keeps it, so its process is not restarted.
      const holder = holderOf(this.broker, node, r);
      resources.push({ ...r, sealed, ...(holder === undefined ? {} : { holder }) });
    }
    const hostCredential = await sealedHostCredential(
      this.broker,
      this.#seals,
      node,
      presence.publicKey,
    );
    if (hostCredential !== undefined) needs.add(hostCredentialContext(node));
    this.#seals.retain(node, needs);
    const value = {
      node,
      resources,
      modules: plan.modules,
      ...(hostCredential === undefined ? {} : { hostCredential }),
      ...(plan.requires === undefined ? {} : { requires: plan.requires }),
    };
    const fingerprint = fingerprintOf(value);
    let before = this.#written.get(node);
    if (before === undefined) {
      before = (await this.#composed.get(node, { signal }))?.value.fingerprint;
    }
    if (before === fingerprint) {
      this.#written.set(node, fingerprint);
      return false;
    }
    await this.#composed.put(node, { ...value, fingerprint }, { signal });
    this.#written.set(node, fingerprint);
    this.composedWrites += 1;
    return true;
  }

  async #sayRefused(node: string, refusals: readonly NodeRefusal[], signal: AbortSignal) {
    const message =
      `${node} is not composed again; what it runs stays as it is until each reason is fixed: ` +
      refusals.map((r) => `${r.reason}; ${r.fix} [${r.code}]`).join(" | ");
    if (this.#refusedSaid.get(node) === message) return;
    this.#refusedSaid.set(node, message);
    this.#options.log?.(`controller: ${message}`);
    await this.#say({ name: node, level: "error", message: message.slice(0, 4000), node }, signal);
  }

  async #sayComposed(node: string, signal: AbortSignal): Promise<void> {
    if (!this.#refusedSaid.has(node)) return;
    this.#refusedSaid.delete(node);
    // Resolves the refusal: same name, so it replaces it (status and the view no longer show it).
    await this.#say(
      { name: node, level: "info", message: `${node} is composed`, node, resolved: true },
      signal,
    );
  }

  #sayProblems(node: string, plan: Extract<NodePlan, { ok: true }>): void {
    const text = plan.grantProblems.map((p) => p.message).join(" | ");
    if ((this.#problemsSaid.get(node) ?? "") === text) return;
    this.#problemsSaid.set(node, text);
    if (text !== "") this.#options.log?.(`controller: on ${node}: ${text}`);
  }

  async #say(condition: Omit<SayCondition, "module">, signal: AbortSignal): Promise<void> {
    try {
      await sayCondition(this.#bus, { ...condition, module: Principal.controller }, { signal });
    } catch (error) {
      // A condition is for people; failing to say one must not stop composing.
      this.#options.log?.(`controller: could not say a condition: ${(error as Error).message}`);
    }
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  #needs(): NeedSources {
    const log = this.#options.log;
    return {
      broker: this.broker,
      secrets: this.#secrets,
      vault: this.#vault,
      ...(log ? { log } : {}),
    };
  }

  /** What the endpoints (endpoints.ts) may use of the controller. */
  #context(): EndpointContext {
    return {
      bus: this.#bus,
      broker: this.broker,
      fleet: this.fleet,
      tokens: this.#tokens,
      exclusive: (fn) => this.#exclusive(fn),
      now: () => this.#now(),
      poke: () => this.#poke(),
    };
  }
}
