/**
 * Starting a process as the supervisor does (its own group, its user, its output through pipes the
 * host reads into files: log-pipe.ts), and a
 * **standby**: one more process of a unit booted ahead, for a process every module on the machine
 * depends on at every moment (the runtime). The standby is started with the unit's environment
 * and the variables its spec names; it does everything a start needs but serve (loads its code,
 * connects, boots a worker) and waits. When the running process exits, or the unit is replaced
 * with only its environment moved (the runtime's composition), the supervisor hands the standby
 * the unit's environment now over its IPC channel and it takes over, so a crash or a handover
 * costs a message instead of a start.
 *
 * A standby carries the unit's marker like the process itself: a host that starts after a crash
 * ends it as a process it has no record of.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { delay, within } from "@mesh/kit";
import { lookupAccount, runningAsRoot } from "./accounts.js";
import { openForProcess, pipeOf } from "./log-pipe.js";
import { isAlive, signalGroup, startTimeOf, type ProcessIdentity } from "./proc.js";
import { logFiles, type ProcessSpec } from "./process-spec.js";

/** How long after a process starts its standby is booted: not beside its own start. */
export const DEFAULT_STANDBY_AFTER_MS = 5_000;

/** Starts `spec` (with `extraEnv` added) in its own process group; resolves once it runs. */
export async function launch(
  root: string,
  spec: ProcessSpec,
  extraEnv: Readonly<Record<string, string>> = {},
  ipc = false,
): Promise<Launched> {
  const account =
    spec.user !== undefined && runningAsRoot() ? await lookupAccount(spec.user) : undefined;
  if (spec.user !== undefined && account === undefined && userInfo().username !== spec.user) {
    // Never run a process as someone other than it asked for: it may rely on that account.
    throw new Error(
      `it runs as ${JSON.stringify(spec.user)}, but the host is not root (it runs as ${JSON.stringify(userInfo().username)}); run the host as root`,
    );
  }
  const files = logFiles(root, spec);
  await mkdir(files.folder, { recursive: true, mode: 0o750 });
  const out = await openForProcess(pipeOf(files.stdout));
  const err = await openForProcess(pipeOf(files.stderr));
  try {
    const env: Record<string, string> = {
      PATH: process.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: account?.home ?? process.env["HOME"] ?? "/",
      ...(account === undefined ? {} : { USER: account.name, LOGNAME: account.name }),
      ...spec.env,
      ...extraEnv,
      [spec.marker.name]: spec.marker.value,
    };
    const [command, ...args] = spec.argv;
    const child = spawn(command ?? "", args, {
      cwd: spec.cwd,
      env,
      detached: true,
      // A standby has an IPC channel to its host (it says when it is ready, and is told to serve).
      stdio: ipc ? ["ignore", out.fd, err.fd, "ipc"] : ["ignore", out.fd, err.fd],
      ...(account === undefined ? {} : { uid: account.uid, gid: account.gid }),
    });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once("spawn", () => resolve(child.pid ?? -1));
      child.once("error", reject);
    });
    const startTime = await startTimeOf(pid);
    return { child, identity: { pid, startTime: startTime ?? "?" } };
  } finally {
    await out.close();
    await err.close();
  }
}

/** A process the supervisor started, and who it is. */
export interface Launched {
  readonly child: ChildProcess;
  readonly identity: ProcessIdentity;
}

/**
 * One process of a unit booted ahead. It says over its IPC channel when it is ready (loaded,
 * connected, a spare worker booted); told `{t: "serve", env}` it takes that environment (the
 * unit's spec now, which may have moved since it was booted) and serves.
 */
export class Standby {
  readonly #root: string;
  readonly #spec: ProcessSpec;
  /** The one booted (or booting): launched, and whether it said it is ready. */
  #booted: Promise<Launched | undefined> | undefined;
  #said: Promise<boolean> | undefined;
  /** The wait before one is booted, while one is due: aborted when it boots sooner or stops. */
  #due: AbortController | undefined;
  #stopped = false;

  constructor(root: string, spec: ProcessSpec) {
    this.#root = root;
    this.#spec = spec;
  }

  /** The spec the standby is booted as. */
  get spec(): ProcessSpec {
    return this.#spec;
  }

  /** Boots one after `ms`, unless one is there or on its way. */
  prepareAfter(ms: number): void {
    if (this.#stopped || this.#booted !== undefined || this.#due !== undefined) return;
    const due = new AbortController();
    this.#due = due;
    void delay(ms, { signal: due.signal, ref: false }).then((elapsed) => {
      if (!elapsed) return; // booted sooner, or stopped
      this.#due = undefined;
      this.#boot();
    });
  }

  /** Boots one now, unless one is there or on its way. */
  prepareNow(): void {
    this.#due?.abort();
    this.#due = undefined;
    this.#boot();
  }

  #boot(): void {
    if (this.#stopped || this.#booted !== undefined) return;
    let said: (ready: boolean) => void = () => undefined;
    this.#said = new Promise((resolve) => (said = resolve));
    const booted = (async (): Promise<Launched | undefined> => {
      try {
        const launched = await launch(this.#root, this.#spec, this.#spec.standby ?? {}, true);
        launched.child.channel?.unref();
        launched.child.on("message", (m: { t?: string }) => {
          if (m?.t === "standby-ready") said(true);
        });
        launched.child.on("error", () => undefined); // a channel write to a process gone
        launched.child.once("exit", () => {
          said(false);
          if (this.#booted === booted) this.#booted = undefined;
        });
        if (this.#stopped) {
          await endStandby(launched.identity);
          return undefined;
        }
        return launched;
      } catch {
        said(false);
        return undefined; // no standby this time: the next exit is a plain start
      }
    })();
    this.#booted = booted;
  }

  /**
   * The standby, told to take over as `spec` (its environment handed over), or undefined when
   * none is ready within `waitMs` (one booting, or due to boot, is waited for: it is ahead of a
   * start). Ready means it said so and catches SIGUSR2 (the kernel says so in /proc).
   */
  async take(spec: ProcessSpec, waitMs: number): Promise<Launched | undefined> {
    if (this.#stopped) return undefined;
    if (this.#booted === undefined && this.#due !== undefined && waitMs > 0) this.prepareNow();
    const booted = this.#booted;
    const said = this.#said;
    this.#booted = undefined;
    this.#said = undefined;
    const launched = await booted;
    if (launched === undefined || launched.child.exitCode !== null) return undefined;
    const ready = await within(said ?? Promise.resolve(false), waitMs, false, { ref: false });
    const { child, identity } = launched;
    if (!ready || !child.connected || !(await catches(identity.pid, SIGUSR2))) {
      await endStandby(identity);
      return undefined;
    }
    child.removeAllListeners("exit");
    child.removeAllListeners("message");
    const env = handedOver(this.#spec, spec);
    const sent = await new Promise<boolean>((resolve) =>
      child.send({ t: "serve", env }, (error) => resolve(error === null)),
    );
    if (!sent) {
      await endStandby(identity);
      return undefined;
    }
    return launched; // it closes the channel itself once it has read the message
  }

  /** Ends the standby (TERM: it has nothing to drain), and boots none again. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#due?.abort();
    this.#due = undefined;
    const launched = await this.#booted;
    this.#booted = undefined;
    if (launched !== undefined) await endStandby(launched.identity);
  }
}

/**
 * Whether a standby booted as `booted` can take over as `spec`: only its environment differs (the
 * same code, command, folder, user and marker).
 */
export function canTakeOver(booted: ProcessSpec, spec: ProcessSpec): boolean {
  const what = (s: ProcessSpec): string =>
    JSON.stringify([s.code ?? null, s.argv, s.cwd, s.user ?? null, s.marker, s.standby ?? null]);
  return what(booted) === what(spec);
}

/** The variables a standby booted as `booted` sets and removes to run as `spec`. */
function handedOver(
  booted: ProcessSpec,
  spec: ProcessSpec,
): { set: Record<string, string>; unset: string[] } {
  const before = new Set([...Object.keys(booted.env), ...Object.keys(booted.standby ?? {})]);
  for (const name of Object.keys(spec.env)) before.delete(name);
  return { set: { ...spec.env }, unset: [...before].sort() };
}

const SIGUSR2 = 12;

/** Whether process `pid` has a handler for signal number `signal` (SigCgt in /proc). */
async function catches(pid: number, signal: number): Promise<boolean> {
  const text = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(text)?.[1];
  return mask !== undefined && (BigInt(`0x${mask}`) & (1n << BigInt(signal - 1))) !== 0n;
}

/** Ends a standby's process group: TERM (it has nothing to drain), then KILL after 5 s. */
export async function endStandby(identity: ProcessIdentity): Promise<void> {
  await signalGroup(identity, "SIGTERM");
  for (let waited = 0; waited < 5_000; waited += 50) {
    if (!(await isAlive(identity))) return;
    await delay(50);
  }
  await signalGroup(identity, "SIGKILL");
}
