/**
 * Starting a process as the supervisor does (its own group, its user, its output in files), and a
 * **standby**: one more process of a unit booted ahead, for a process every module on the machine
 * depends on at every moment (the runtime). The standby is started with the unit's environment
 * and the variables its spec names; it does everything a start needs but serve (loads its code,
 * connects, boots a worker) and waits. When the running process exits, the supervisor sends the
 * standby SIGUSR2 and it takes over, so a crash costs a signal instead of a start.
 *
 * A standby carries the unit's marker like the process itself: a host that starts after a crash
 * ends it as a process it has no record of.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, open, readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { lookupAccount, runningAsRoot } from "./accounts.js";
import { isAlive, signalGroup, startTimeOf, type ProcessIdentity } from "./proc.js";
import { logFiles, type ProcessSpec } from "./supervisor.js";

/** How long after a process starts its standby is booted: not beside its own start. */
export const DEFAULT_STANDBY_AFTER_MS = 5_000;

/** Starts `spec` (with `extraEnv` added) in its own process group; resolves once it runs. */
export async function launch(
  root: string,
  spec: ProcessSpec,
  extraEnv: Readonly<Record<string, string>> = {},
): Promise<{ child: ChildProcess; identity: ProcessIdentity }> {
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
  const out = await open(files.stdout, "a", 0o640);
  const err = await open(files.stderr, "a", 0o640);
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
      stdio: ["ignore", out.fd, err.fd],
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

/** One process of a unit booted ahead, waiting for SIGUSR2 to take over. */
export class Standby {
  readonly #root: string;
  readonly #spec: ProcessSpec;
  #ready: { child: ChildProcess; identity: ProcessIdentity } | undefined;
  #timer: NodeJS.Timeout | undefined;
  #starting: Promise<void> | undefined;
  #stopped = false;

  constructor(root: string, spec: ProcessSpec) {
    this.#root = root;
    this.#spec = spec;
  }

  /** Boots one after `ms`, unless one is there or on its way. */
  prepareAfter(ms: number): void {
    if (this.#stopped || this.#ready !== undefined || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#starting = this.#boot();
    }, ms);
    this.#timer.unref();
  }

  async #boot(): Promise<void> {
    if (this.#stopped || this.#ready !== undefined) return;
    try {
      const launched = await launch(this.#root, this.#spec, this.#spec.standby ?? {});
      launched.child.once("exit", () => {
        if (this.#ready?.child === launched.child) this.#ready = undefined;
      });
      if (this.#stopped) await end(launched.identity);
      else this.#ready = launched;
    } catch {
      // No standby this time: the next exit is a plain restart.
    }
  }

  /**
   * The standby, told to take over (SIGUSR2), or undefined when none is ready. Ready means it
   * catches SIGUSR2 (the kernel says so in /proc): it sets its handler only once it has loaded
   * and connected, and a signal before that would end it.
   */
  async take(): Promise<{ child: ChildProcess; identity: ProcessIdentity } | undefined> {
    const ready = this.#ready;
    this.#ready = undefined;
    if (ready === undefined || ready.child.exitCode !== null) return undefined;
    if (!(await catches(ready.identity.pid, SIGUSR2))) {
      await end(ready.identity);
      return undefined;
    }
    ready.child.removeAllListeners("exit");
    try {
      process.kill(ready.identity.pid, "SIGUSR2");
    } catch {
      return undefined;
    }
    return ready;
  }

  /** Ends the standby (TERM: it has nothing to drain), and boots none again. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#starting;
    const ready = this.#ready;
    this.#ready = undefined;
    if (ready !== undefined) await end(ready.identity);
  }
}

const SIGUSR2 = 12;

/** Whether process `pid` has a handler for signal number `signal` (SigCgt in /proc). */
async function catches(pid: number, signal: number): Promise<boolean> {
  const text = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(text)?.[1];
  return mask !== undefined && (BigInt(`0x${mask}`) & (1n << BigInt(signal - 1))) !== 0n;
}

async function end(identity: ProcessIdentity): Promise<void> {
  await signalGroup(identity, "SIGTERM");
  for (let waited = 0; waited < 5_000; waited += 50) {
    if (!(await isAlive(identity))) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await signalGroup(identity, "SIGKILL");
}
