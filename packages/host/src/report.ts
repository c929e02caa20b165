/**
 * The host's have reporter: says in mesh-have, per module, how it runs here (health, restarts,
 * the last error, what it waits for), writing only what changed, and `stopped` for a module no
 * longer composed here.
 */
import type { KvBucket } from "@mesh/bus";
import { canonicalJson, fingerprintOf } from "@mesh/core";
import { RUNTIME_PROCESS_ID, nodeModuleKey, type Composed, type Have } from "@mesh/protocol";
import type { Waiting } from "./apply.js";
import {
  moduleHealth,
  runtimeUnreachable,
  type HealthRules,
  type Reason,
  type ToolsFacts,
} from "./health.js";
import type { Desired } from "./plan.js";
import { mergedToolsFacts, readRuntimeStatus, toolModulesOf } from "./runtime-handover.js";
import type { Supervisor } from "./supervisor.js";

export interface ReporterOptions {
  readonly node: string;
  readonly root: string;
  readonly rules: HealthRules;
  readonly supervisor: Supervisor;
  /** What is wanted and how the last apply went. */
  readonly applied: () => {
    readonly desired: Desired | undefined;
    readonly composed: Composed | undefined;
    readonly applyErrors: ReadonlyMap<string, Reason>;
    readonly waiting: ReadonlyMap<string, Waiting>;
  };
  /** mesh-have once the bus is there. */
  readonly have: () => KvBucket<Have> | undefined;
  /** Whether the host reaches the bus now. */
  readonly connected: () => boolean;
  /** A module's config as its processes see it (the provisioner's), for `have.config`. */
  readonly configOf?: (module: string) => Readonly<Record<string, unknown>> | undefined;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

type Said = Omit<
  Have,
  "since" | "build" | "lastError" | "lastErrorCode" | "waitingFor" | "exits" | "config"
> & {
  build: string | undefined;
  /** The fingerprint of each config key's value. */
  config?: Record<string, string> | undefined;
  lastError: Reason | undefined;
  waitingFor?: Waiting | undefined;
  exits?: Have["exits"] | undefined;
};

export class Reporter {
  readonly #o: ReporterOptions;
  /** What was last written to mesh-have, by module. */
  readonly #reported = new Map<string, Have>();
  /**
   * The modules this host run has itself reported. A report restored from the previous run is
   * said again once, even unchanged (keeping its `since`): readers such as `mesh up` wait for a
   * report of now, not of the run before a crash.
   */
  readonly #confirmed = new Set<string>();
  readonly #restartBase = new Map<string, number>();
  #reporting = false;

  constructor(options: ReporterOptions) {
    this.#o = options;
  }

  /** Says everything again on the next report (what was written while away may be lost). */
  forget(): void {
    this.#reported.clear();
  }

  /**
   * What the previous host said of each module, so `restarts` counts on and `since` stays
   * when the health did not change.
   */
  async restore(): Promise<void> {
    const have = this.#o.have();
    if (have === undefined) return;
    for (const module of this.#o.applied().desired?.modules.keys() ?? []) {
      try {
        const last = await have.get(nodeModuleKey(this.#o.node, module), {
          signal: this.#o.signal,
        });
        if (last === undefined) continue;
        this.#restartBase.set(module, last.value.restarts);
        if (!this.#reported.has(module)) this.#reported.set(module, last.value);
      } catch (error) {
        this.#o.log(`have of ${module} not read back: ${(error as Error).message}`);
      }
    }
  }

  async report(): Promise<void> {
    if (this.#reporting) return; // the tick and an apply may both ask; one at a time
    this.#reporting = true;
    try {
      await this.#reportNow();
    } finally {
      this.#reporting = false;
    }
  }

  async #reportNow(): Promise<void> {
    const { desired, composed, applyErrors, waiting } = this.#o.applied();
    const supervisor = this.#o.supervisor;
    if (desired === undefined) return;
    const now = Date.now();
    const modules = new Set([...desired.modules.keys()]);
    const tools = await this.#toolsStatus(desired);
    for (const [module, fingerprint] of desired.modules) {
      const ids = [...desired.processes.keys()].filter(
        (id) => desired.processes.get(id)?.resource.module === module,
      );
      const statuses = ids.map((id) => supervisor.status(id));
      const facts = statuses.map((s) => ({
        running: s?.running ?? false,
        since: s?.since,
        exits: s?.exits ?? [],
        exitsInARow: s?.exitsInARow ?? 0,
        lastError: s?.lastError,
      }));
      const { health, lastError, exits } = moduleHealth({
        applyError: applyErrors.get(module),
        waitingFor: waiting.get(module),
        processes: facts,
        now,
        rules: this.#o.rules,
        ...(tools.has(module) ? { tools: tools.get(module) } : {}),
      });
      const restarts =
        (this.#restartBase.get(module) ?? 0) + statuses.reduce((n, s) => n + (s?.restarts ?? 0), 0);
      const build = composed?.modules?.[module]?.build;
      const waitingFor = waiting.get(module);
      await this.#write(module, {
        build,
        fingerprint,
        health,
        restarts,
        lastError,
        waitingFor,
        config: this.#configOf(module),
        exits: exits && { inARow: exits.inARow, last: new Date(exits.last).toISOString() },
      });
    }
    for (const module of [...this.#reported.keys()]) {
      if (modules.has(module)) continue;
      const last = this.#reported.get(module) as Have;
      if (last.health !== "stopped")
        await this.#write(module, {
          build: last.build,
          fingerprint: last.fingerprint,
          health: "stopped",
          restarts: last.restarts,
          lastError: undefined,
        });
    }
  }

  /**
   * The load result of each module the runtime serves here, from its status file: undefined for a
   * module it has not reported yet, or when the file is not from the runtime running now.
   */
  async #toolsStatus(desired: Desired): Promise<Map<string, ToolsFacts | undefined>> {
    const supervisor = this.#o.supervisor;
    const out = new Map<string, ToolsFacts | undefined>();
    const runtime = desired.processes.get(RUNTIME_PROCESS_ID)?.resource;
    if (runtime === undefined) return out;
    for (const module of toolModulesOf(runtime)) out.set(module, undefined);
    const current = await readRuntimeStatus(
      this.#o.root,
      supervisor.identity(RUNTIME_PROCESS_ID)?.pid,
    );
    const retiring = await readRuntimeStatus(
      this.#o.root,
      supervisor.retiring(RUNTIME_PROCESS_ID)?.pid,
    );
    const unreachable = runtimeUnreachable({
      bus: current?.bus,
      hostConnected: this.#o.connected(),
      now: Date.now(),
      rules: this.#o.rules,
    });
    for (const module of out.keys())
      out.set(
        module,
        unreachable === undefined
          ? mergedToolsFacts(current, retiring, module)
          : { state: "failing", error: unreachable },
      );
    return out;
  }

  /**
   * The fingerprint of each of the module's config values as its processes see them: a config
   * rollout's gate reads which value a node runs (decision 0131), never the value itself.
   */
  #configOf(module: string): Record<string, string> | undefined {
    const config = this.#o.configOf?.(module);
    if (config === undefined) return undefined;
    return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, fingerprintOf(v)]));
  }

  async #write(module: string, now: Said): Promise<void> {
    const have = this.#o.have();
    if (have === undefined) return;
    const last = this.#reported.get(module);
    const same =
      last !== undefined &&
      this.#confirmed.has(module) &&
      last.health === now.health &&
      last.build === now.build &&
      last.fingerprint === now.fingerprint &&
      last.restarts === now.restarts &&
      last.lastError === now.lastError?.message &&
      last.lastErrorCode === now.lastError?.code &&
      last.waitingFor?.what === now.waitingFor?.what &&
      last.waitingFor?.code === now.waitingFor?.code &&
      last.exits?.inARow === now.exits?.inARow &&
      sameConfig(last.config?.values, now.config);
    if (same) return;
    const configSince =
      last?.config !== undefined && sameConfig(last.config.values, now.config)
        ? last.config.since
        : new Date().toISOString();
    const value: Have = {
      ...(now.build === undefined ? {} : { build: now.build }),
      fingerprint: now.fingerprint,
      health: now.health,
      // A new build's health is its own from the start, whatever the one before it was.
      since:
        last !== undefined && last.health === now.health && last.build === now.build
          ? last.since
          : new Date().toISOString(),
      restarts: now.restarts,
      ...(now.lastError === undefined
        ? {}
        : { lastError: now.lastError.message.slice(0, 2000), lastErrorCode: now.lastError.code }),
      ...(now.waitingFor === undefined ? {} : { waitingFor: now.waitingFor }),
      ...(now.exits === undefined ? {} : { exits: now.exits }),
      ...(now.config === undefined ? {} : { config: { values: now.config, since: configSince } }),
    };
    try {
      await have.put(nodeModuleKey(this.#o.node, module), value, { signal: this.#o.signal });
      this.#reported.set(module, value);
      this.#confirmed.add(module);
    } catch (error) {
      if (!this.#o.signal.aborted)
        this.#o.log(`have of ${module} not written: ${(error as Error).message}`);
    }
  }
}

const sameConfig = (a: unknown, b: unknown): boolean =>
  a === undefined || b === undefined ? a === b : canonicalJson(a) === canonicalJson(b);
