/**
 * Runs and watches processes: each in its own process group (so a stop reaches everything it
 * started), as its user, with its environment and working folder, its output through pipes the
 * host reads into bounded files (log-pipe.ts); restarted on exit after a delay that doubles from 1 s to 5 min and starts again at 1 s
 * once it ran healthy (at 0 for a process that asks to be restarted at once); stopped with TERM
 * to the group, a grace period, then KILL; replaced without a gap (the new one started and ready
 * before the old one is stopped) when the caller asks.
 *
 * A process the host started before it restarted is adopted: watched by polling /proc, since
 * only its parent could wait for it.
 */
import type { ChildProcess } from "node:child_process";
import { mkdir, readlink, stat } from "node:fs/promises";
import { Backoff, delay, within, type BackoffPolicy } from "@mesh/kit";
import type { TailLimits } from "./log-lines.js";
import { LogPipe } from "./log-pipe.js";
import { FileTail } from "./log-tail.js";
import { isAlive, signalGroup, type ProcessIdentity } from "./proc.js";
import { DEFAULT_STANDBY_AFTER_MS, Standby, canTakeOver, endStandby, launch } from "./standby.js";
import { logFiles, type ProcessSpec } from "./process-spec.js";

export { logFiles, type ProcessSpec };

/** 1 s doubling to 5 min, with the kit's default jitter. */
export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 5 * 60_000 };

export interface SupervisorOptions {
  readonly root: string;
  readonly backoff: BackoffPolicy;
  /** A process that ran this long is healthy, and its next exit starts the backoff again. */
  readonly healthyMs: number;
  readonly graceMs: number;
  readonly tail: TailLimits;
  /** How often adopted processes and output files are looked at. */
  readonly pollMs: number;
  /** How long after a process starts its standby is booted (default 5 s). */
  readonly standbyAfterMs?: number;
  /** How long a standby still booting is waited for rather than a process started (default 30 s). */
  readonly standbyWaitMs?: number;
  /** A process was spawned (also on each restart); the host records its identity. */
  readonly onSpawned: (id: string, identity: ProcessIdentity) => void;
  /** A process exited (or could not be started); it is restarted after `delayMs`. */
  readonly onExit: (id: string, exit: ExitInfo) => void;
  readonly onLine: (
    module: string,
    process: string,
    stream: "stdout" | "stderr",
    line: string,
  ) => void;
}

export interface ExitInfo {
  readonly reason: string;
  readonly delayMs: number;
}

/** What the host reports about one process. */
export interface ProcessStatus {
  readonly running: boolean;
  /** When the current run began (ms since epoch). */
  readonly since: number | undefined;
  /** When each recent exit happened. */
  readonly exits: readonly number[];
  /** Exits in a row since a run last lasted the healthy time (a crash loop's count). */
  readonly exitsInARow: number;
  readonly restarts: number;
  readonly lastError: string | undefined;
}

interface Unit {
  spec: ProcessSpec;
  identity: ProcessIdentity | undefined;
  child: ChildProcess | undefined;
  since: number | undefined;
  exits: number[];
  restarts: number;
  backoff: Backoff;
  lastError: string | undefined;
  /** The wait before a restart, while one runs: aborted when the unit stops. */
  restartWait: AbortController | undefined;
  stopping: boolean;
  tails: OutputTail[];
  exited: Promise<void>;
  markExited: () => void;
  /** For a process that keeps one booted ahead (the runtime): it. */
  standby?: Standby;
}

export class Supervisor implements AsyncDisposable {
  readonly #options: SupervisorOptions;
  readonly #units = new Map<string, Unit>();
  /** Processes being replaced: still running (draining) beside their successor, by id. */
  readonly #retiring = new Map<string, { unit: Unit; done: Promise<void> }>();
  /** Ends the polling (the supervisor is disposed). */
  readonly #closed = new AbortController();

  constructor(options: SupervisorOptions) {
    this.#options = options;
    void this.#pollEvery(options.pollMs);
  }

  ids(): string[] {
    return [...this.#units.keys()].sort();
  }

  status(id: string): ProcessStatus | undefined {
    const unit = this.#units.get(id);
    if (unit === undefined) return undefined;
    return {
      running: unit.identity !== undefined,
      since: unit.since,
      exits: [...unit.exits],
      exitsInARow: unit.backoff.failures,
      restarts: unit.restarts,
      lastError: unit.lastError,
    };
  }

  identity(id: string): ProcessIdentity | undefined {
    return this.#units.get(id)?.identity;
  }

  /** The process being replaced under `id` while it drains beside its successor. */
  retiring(id: string): ProcessIdentity | undefined {
    return this.#retiring.get(id)?.unit.identity;
  }

  /**
   * Replaces a running process without a gap: starts the new one beside it, waits for `ready`
   * (which the caller bounds with its own deadline), then stops the old one with `drainMs` between
   * TERM and KILL. Resolves once the new one is ready, with the old one's end still to come in
   * `retired`. With nothing running under the id, it is a plain start.
   */
  async replace(
    spec: ProcessSpec,
    ready: (identity: ProcessIdentity) => Promise<void>,
    drainMs: number,
  ): Promise<{ retired: Promise<void> }> {
    const old = this.#units.get(spec.id);
    if (old?.identity === undefined) {
      if (old !== undefined) await this.stop(spec.id);
      await this.start(spec);
      return { retired: Promise.resolve() };
    }
    // The old one leaves the table: its exit from here on is not a crash to restart.
    old.stopping = true;
    old.restartWait?.abort();
    this.#units.delete(spec.id);
    const unit = this.#newUnit(spec);
    unit.restarts = old.restarts;
    unit.tails = old.tails; // one reader of the output files both processes write
    old.tails = [];
    this.#units.set(spec.id, unit);
    let endOld = (): void => undefined;
    const stopOld = new Promise<void>((resolve) => (endOld = resolve));
    const done = stopOld.then(() => this.#end(old, drainMs));
    this.#retiring.set(spec.id, { unit: old, done });
    void done.finally(() => {
      if (this.#retiring.get(spec.id)?.unit === old) this.#retiring.delete(spec.id);
    });
    try {
      // A standby booted ahead takes the new environment: the replacement costs a message.
      const taken =
        old.standby !== undefined && canTakeOver(old.standby.spec, spec)
          ? await old.standby.take(spec, this.#standbyWaitMs)
          : undefined;
      if (taken !== undefined) this.#attach(unit, taken.child, taken.identity);
      else await this.#spawn(unit);
      if (unit.identity !== undefined) await ready(unit.identity);
      // The next change finds one booted: prepared now the new one serves, not 5 s later.
      unit.standby?.prepareNow();
    } finally {
      endOld();
    }
    return { retired: done };
  }

  /** Starts the process now. */
  async start(spec: ProcessSpec, carried?: { restarts: number }): Promise<void> {
    const unit = this.#newUnit(spec);
    unit.restarts = carried?.restarts ?? 0;
    this.#units.set(spec.id, unit);
    await this.#spawn(unit);
  }

  /** Watches a process a previous host started, whose identity was recorded. */
  async adopt(
    spec: ProcessSpec,
    identity: ProcessIdentity,
    carried?: { restarts: number; since?: number },
  ): Promise<void> {
    const unit = this.#newUnit(spec);
    unit.identity = identity;
    unit.restarts = carried?.restarts ?? 0;
    unit.since = carried?.since ?? Date.now();
    unit.backoff.started(unit.since);
    this.#units.set(spec.id, unit);
    unit.tails = await this.#tails(spec, identity.pid);
    for (const tail of unit.tails) await tail.watch();
    // An adopted runtime is backed by a standby of this host's, as one it started is.
    this.#prepareStandby(unit);
  }

  /** Stops the process and forgets it: TERM to its group, the grace period, then KILL. */
  async stop(id: string, graceMs = this.#options.graceMs): Promise<void> {
    const unit = this.#units.get(id);
    await this.#retiring.get(id)?.done;
    if (unit === undefined) return;
    await this.#end(unit, graceMs);
    this.#units.delete(id);
  }

  async #end(unit: Unit, graceMs: number): Promise<void> {
    unit.stopping = true;
    unit.restartWait?.abort();
    await unit.standby?.stop();
    const identity = unit.identity;
    if (identity !== undefined) {
      await signalGroup(identity, "SIGTERM");
      const gone = await this.#waitGone(unit, identity, graceMs);
      if (!gone) {
        await signalGroup(identity, "SIGKILL");
        await this.#waitGone(unit, identity, 10_000);
      }
    }
    await Promise.all(unit.tails.map((t) => t.poll().catch(() => undefined)));
    await Promise.all(unit.tails.map((t) => t.close()));
  }

  /** Stops watching (processes keep running, to be adopted by the next host). */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed.abort();
    for (const unit of this.#units.values()) {
      unit.restartWait?.abort();
      await unit.standby?.stop();
      unit.child?.removeAllListeners("exit");
      unit.child?.unref();
      await Promise.all(unit.tails.map((t) => t.poll().catch(() => undefined)));
      await Promise.all(unit.tails.map((t) => t.close()));
    }
    this.#units.clear();
  }

  /** Resolves once every process being replaced has drained and ended. */
  async drained(): Promise<void> {
    await Promise.all([...this.#retiring.values()].map((r) => r.done));
  }

  /** Stops every process (waiting for those being replaced to drain), then stops watching. */
  async stopAll(): Promise<void> {
    await Promise.all(this.ids().map((id) => this.stop(id)));
    await Promise.all([...this.#retiring.values()].map((r) => r.done));
    await this[Symbol.asyncDispose]();
  }

  get #standbyWaitMs(): number {
    return this.#options.standbyWaitMs ?? 30_000;
  }

  #newUnit(spec: ProcessSpec): Unit {
    let markExited = (): void => undefined;
    const exited = new Promise<void>((resolve) => (markExited = resolve));
    return {
      spec,
      identity: undefined,
      child: undefined,
      since: undefined,
      exits: [],
      restarts: 0,
      backoff: new Backoff({ ...this.#options.backoff, healthyMs: this.#options.healthyMs }),
      lastError: undefined,
      restartWait: undefined,
      stopping: false,
      tails: [],
      exited,
      markExited,
    };
  }

  async #spawn(unit: Unit): Promise<void> {
    const { spec } = unit;
    unit.restartWait = undefined;
    if (unit.stopping) return;
    try {
      // A process adopted with its output in files was read there; the new one writes a pipe.
      if (unit.tails.length === 0 || unit.tails.some((t) => t instanceof FileTail)) {
        await Promise.all(unit.tails.map((t) => t.close()));
        unit.tails = await this.#tails(spec);
      }
      // Read before the process can write a byte.
      for (const tail of unit.tails) await tail.watch();
      const { child, identity } = await launch(this.#options.root, spec);
      this.#attach(unit, child, identity);
    } catch (error) {
      this.#exited(unit, undefined, `could not be started: ${(error as Error).message}`);
    }
  }

  /** Makes `child` the unit's process: watched, recorded, and (for a runtime) backed by a standby. */
  #attach(unit: Unit, child: ChildProcess, identity: ProcessIdentity): void {
    unit.child = child;
    unit.identity = identity;
    unit.since = Date.now();
    unit.backoff.started(unit.since);
    let markExited = (): void => undefined;
    unit.exited = new Promise<void>((resolve) => (markExited = resolve));
    unit.markExited = markExited;
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      this.#exited(
        unit,
        child,
        signal === null ? `exited with code ${String(code)}` : `was ended by ${signal}`,
      );
    // A process that exits at once may have exited while it was being launched (its 'exit'
    // already emitted, with nobody listening): it is said exited now, not taken as running.
    if (child.exitCode !== null || child.signalCode !== null) {
      setImmediate(() => onExit(child.exitCode, child.signalCode));
    } else child.once("exit", onExit);
    this.#options.onSpawned(unit.spec.id, identity);
    this.#prepareStandby(unit);
  }

  /** For a process that keeps one booted ahead (the runtime): boots it after the delay. */
  #prepareStandby(unit: Unit): void {
    if (unit.spec.standby === undefined) return;
    unit.standby ??= new Standby(this.#options.root, unit.spec);
    unit.standby.prepareAfter(this.#options.standbyAfterMs ?? DEFAULT_STANDBY_AFTER_MS);
  }

  #exited(unit: Unit, child: ChildProcess | undefined, reason: string): void {
    if (child !== undefined && unit.child !== child) return;
    const now = Date.now();
    unit.identity = undefined;
    unit.child = undefined;
    unit.since = undefined;
    unit.markExited();
    if (unit.stopping) return;
    unit.exits = [...unit.exits.slice(-19), now];
    unit.lastError = `${unit.spec.id} ${reason}`;
    const backoff = unit.backoff.next();
    // The first exit after a healthy run (or the very first) of a process others need every
    // moment is restarted at once; the backoff still counts it.
    const delayMs = unit.backoff.failures === 1 && unit.spec.restartAtOnce === true ? 0 : backoff;
    this.#options.onExit(unit.spec.id, { reason: unit.lastError, delayMs });
    void this.#restart(unit, delayMs);
  }

  /** Starts the unit again after `delayMs`; at once through its standby when one is ready. */
  async #restart(unit: Unit, delayMs: number): Promise<void> {
    // A standby booted ahead takes over: the restart costs a message, not a start.
    const standby =
      delayMs === 0 ? await unit.standby?.take(unit.spec, this.#standbyWaitMs) : undefined;
    if (unit.stopping) {
      // Stopped while the standby was being taken: it serves now, so it is ended as the unit was.
      if (standby !== undefined) await endStandby(standby.identity);
      return;
    }
    if (standby !== undefined) {
      unit.restarts += 1;
      this.#attach(unit, standby.child, standby.identity);
      return;
    }
    const wait = new AbortController();
    unit.restartWait = wait;
    // Cut short (false) when the unit is stopped or replaced meanwhile: nothing to start then.
    if (!(await delay(delayMs, { signal: wait.signal }))) return;
    unit.restarts += 1;
    await this.#spawn(unit);
  }

  async #waitGone(unit: Unit, identity: ProcessIdentity, ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (unit.child !== undefined) {
        const exited = unit.exited.then(() => true);
        if (await within(exited, Math.min(100, until - Date.now()), false, { ref: false }))
          return true;
      } else if (!(await isAlive(identity))) return true;
      else await delay(50);
    }
    return !(await isAlive(identity));
  }

  /**
   * A reader of each of the process's outputs: its pipe; or, for a process adopted from a host
   * that handed it the log files themselves (`pid`'s stdout is the file), the file.
   */
  async #tails(spec: ProcessSpec, pid?: number): Promise<OutputTail[]> {
    const files = logFiles(this.#options.root, spec);
    await mkdir(files.folder, { recursive: true, mode: 0o750 });
    const make = async (fd: 1 | 2, path: string): Promise<OutputTail> => {
      const stream = fd === 1 ? "stdout" : "stderr";
      const onLine = (line: string): void =>
        this.#options.onLine(spec.module, spec.name, stream, line);
      const target =
        pid === undefined
          ? undefined
          : await readlink(`/proc/${pid}/fd/${fd}`).catch(() => undefined);
      if (target !== path) return new LogPipe(path, this.#options.tail, onLine);
      const size = (await stat(path).catch(() => undefined))?.size ?? 0;
      return new FileTail(path, size, this.#options.tail, onLine);
    };
    return [await make(1, files.stdout), await make(2, files.stderr)];
  }

  /** Looks at adopted processes and output files every `ms` until the supervisor is disposed. */
  async #pollEvery(ms: number): Promise<void> {
    while (await delay(ms, { signal: this.#closed.signal, ref: false })) await this.#poll();
  }

  async #poll(): Promise<void> {
    for (const unit of [...this.#units.values()]) {
      for (const tail of unit.tails) await tail.poll().catch(() => undefined);
      // Adopted processes are not our children: their exit is seen here.
      if (unit.child === undefined && unit.identity !== undefined && !unit.stopping) {
        if (!(await isAlive(unit.identity)))
          this.#exited(unit, undefined, "exited (it was adopted, so its code is unknown)");
      }
    }
  }
}

/** What reads one of a process's outputs: its pipe (log-pipe.ts), or its file (log-tail.ts). */
interface OutputTail {
  watch(): void | Promise<void>;
  poll(): Promise<void>;
  /** Stops reading; what was read is written first. */
  close(): Promise<void>;
}
