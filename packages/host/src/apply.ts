/**
 * The host's executor: makes the machine match a composition, one pass at a time — every kind's
 * steps (`kinds/`) in the safe order `kinds/index.ts` lists, each recording what it did in the
 * applied-state store before or after it as a crash requires — and keeps how the last pass went
 * (the modules failed, and those waiting). It also finds, at start, the processes an earlier host
 * left.
 */
import { ErrorCode, errorCodeOf, type Composed } from "@mesh/protocol";
import { pruneCache } from "./archives.js";
import type { Reason } from "./health.js";
import { STEPS } from "./kinds/index.js";
import type { KindContext, Pass, Waiting } from "./kinds/kind.js";
import { recoverProcesses } from "./kinds/process.js";
import { desiredOf, planOf, type Desired, type Plan } from "./plan.js";

export type { Waiting };

export type ApplierOptions = KindContext;

export class Applier {
  readonly #o: ApplierOptions;
  /**
   * What the last finished apply wanted, and the composition it came from; undefined until one
   * finished. Not the one being applied: until its processes are started, the ones running are
   * the previous build's, and their health is that build's, not the new one's.
   */
  #desired: Desired | undefined;
  #composed: Composed | undefined;
  #applyErrors = new Map<string, Reason>();
  /** Modules that wait for a need the controller cannot seal yet, or for the bus, with what they wait for. */
  #waiting = new Map<string, Waiting>();

  constructor(options: ApplierOptions) {
    this.#o = options;
  }

  get desired(): Desired | undefined {
    return this.#desired;
  }
  /** The composition the last finished apply made the machine match. */
  get composed(): Composed | undefined {
    return this.#composed;
  }
  get applyErrors(): ReadonlyMap<string, Reason> {
    return this.#applyErrors;
  }
  get waiting(): ReadonlyMap<string, Waiting> {
    return this.#waiting;
  }

  /** Whether a module waits for the bus (not for a secret or a credential). */
  get waitsForBus(): boolean {
    return waitsForBus(this.#waiting);
  }

  /** Finds the processes a previous host started: adopts the recorded ones, ends the rest. */
  recover(): Promise<void> {
    return recoverProcesses(this.#o);
  }

  /** Makes the machine match `composed`. */
  async apply(composed: Composed): Promise<void> {
    const { store, provisioner } = this.#o;
    const desired = desiredOf(composed.resources, (m) => provisioner.configOf(m));
    const plan = planOf(desired, store.state);
    const failed = new Map<string, Reason>(
      [...desired.conflicts].map(([m, message]) => [
        m,
        { code: ErrorCode.COMPOSITION_REFUSED, message },
      ]),
    );
    const pass: Pass<Desired, Plan> = {
      desired,
      plan,
      failed,
      waiting: new Map(),
      replaced: new Set(),
      fail: (module, error) => {
        const message = error instanceof Error ? error.message : String(error);
        if (!failed.has(module)) failed.set(module, { code: errorCodeOf(error), message });
        this.#o.log(`${module}: ${message}`);
      },
    };
    try {
      for (const step of STEPS) await step(pass, this.#o);
    } finally {
      this.#desired = desired;
      this.#composed = composed;
    }
    this.#waiting = pass.waiting;
    this.#applyErrors = new Map([...failed].filter(([module]) => !pass.waiting.has(module)));
    await store.saved();
    // Archives nothing uses any more leave the cache once everything applied; while something
    // fails, the cache is left alone (what ran before may be needed again).
    if (failed.size === 0)
      await pruneCache(
        this.#o.root,
        new Set([...desired.deliveries.values()].map((d) => d.digest)),
      );
  }
}

/** Whether any of the waits is for the bus: decided on the wait's code, never on its words. */
export function waitsForBus(waiting: ReadonlyMap<string, Waiting>): boolean {
  for (const w of waiting.values()) if (w.code === ErrorCode.BUS_UNAVAILABLE) return true;
  return false;
}
