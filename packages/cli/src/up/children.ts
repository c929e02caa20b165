/**
 * The processes `mesh up` runs beside the bus (controller, delivery daemons, host), each its own
 * process with its own credential: started, restarted with a growing delay when one dies, and
 * stopped together — TERM, a grace period, then KILL — so Ctrl-C leaves nothing behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Backoff } from "@mesh/kit";
import { RotatingLog } from "./rotating-log.js";

export interface ChildSpec {
  /** A short name for logs: `controller`, `assigner`, … */
  readonly name: string;
  readonly argv: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

export interface ChildrenOptions {
  /** Where each child's output goes: `<logs>/<name>.log`. */
  readonly logs: string;
  /** Told about starts, deaths and restarts. */
  readonly say: (line: string) => void;
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** A child that ran this long is well again, and its next death restarts at the initial delay. */
  readonly healthyMs?: number;
  readonly graceMs?: number;
}

interface Running {
  readonly spec: ChildSpec;
  child: ChildProcess | undefined;
  startedAt: number;
  readonly backoff: Backoff;
  restarts: number;
  timer: NodeJS.Timeout | undefined;
  log: RotatingLog;
  exited: Promise<void>;
}

export class Children implements AsyncDisposable {
  readonly #options: Required<ChildrenOptions>;
  readonly #running = new Map<string, Running>();
  #stopping = false;

  constructor(options: ChildrenOptions) {
    this.#options = {
      initialBackoffMs: 1_000,
      maxBackoffMs: 60_000,
      healthyMs: 30_000,
      graceMs: 10_000,
      ...options,
    };
  }

  /** Starts a child and keeps it running until `stop()`. */
  async start(spec: ChildSpec): Promise<void> {
    await mkdir(this.#options.logs, { recursive: true, mode: 0o700 });
    const log = new RotatingLog(join(this.#options.logs, `${spec.name}.log`));
    const running: Running = {
      spec,
      child: undefined,
      startedAt: 0,
      backoff: new Backoff({
        initialMs: this.#options.initialBackoffMs,
        maxMs: this.#options.maxBackoffMs,
        healthyMs: this.#options.healthyMs,
      }),
      restarts: 0,
      timer: undefined,
      log,
      exited: Promise.resolve(),
    };
    this.#running.set(spec.name, running);
    this.#spawn(running);
  }

  /** The pid of each running child, by name. */
  pids(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, running] of this.#running) {
      if (running.child?.pid !== undefined && running.child.exitCode === null)
        out[name] = running.child.pid;
    }
    return out;
  }

  #spawn(running: Running): void {
    const [command, ...args] = running.spec.argv;
    if (command === undefined) throw new Error(`${running.spec.name}: empty argv`);
    // Not detached: a terminal's Ctrl-C reaches the children too, and each stops gracefully.
    const child = spawn(command, args, {
      env: { ...process.env, ...running.spec.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.child = child;
    running.startedAt = Date.now();
    running.backoff.started(running.startedAt);
    child.stdout?.pipe(running.log, { end: false });
    child.stderr?.pipe(running.log, { end: false });
    running.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        resolve();
        if (this.#stopping) return;
        const ranMs = Date.now() - running.startedAt;
        const delayMs = running.backoff.next();
        running.restarts += 1;
        this.#options.say(
          `${running.spec.name} stopped (${signal ?? `code ${String(code)}`}) after ${Math.round(ranMs / 1000)} s; ` +
            `restarting in ${Math.round(delayMs / 1000)} s (see its log: ${join(this.#options.logs, `${running.spec.name}.log`)})`,
        );
        running.timer = setTimeout(() => {
          running.timer = undefined;
          if (!this.#stopping) this.#spawn(running);
        }, delayMs);
      });
    });
  }

  /** Stops every child: TERM, then KILL after the grace period. Stopping twice is harmless. */
  async stop(): Promise<void> {
    this.#stopping = true;
    const all = [...this.#running.values()].reverse();
    await Promise.all(
      all.map(async (running) => {
        if (running.timer !== undefined) clearTimeout(running.timer);
        const child = running.child;
        if (child !== undefined && child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM");
          const killer = setTimeout(() => child.kill("SIGKILL"), this.#options.graceMs);
          await running.exited;
          clearTimeout(killer);
        }
        running.log.end();
      }),
    );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
