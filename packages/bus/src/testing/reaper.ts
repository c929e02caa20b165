/**
 * Processes a test starts end with the test process, also when its `after()` never runs: the
 * runner killed the file on its timeout, or someone sent it SIGKILL (issue 15). The first
 * registration starts one reaper process (reaper-main.ts) in a process group of its own, holding
 * the read end of a pipe only this process writes; when this process is gone, however it went,
 * the pipe ends and the reaper ends every registered process still alive (by pid and start time:
 * a reused pid is left alone), with what the mesh's processes run under (`root`) after it.
 *
 * ```ts
 * const child = spawn("mesh", ["up", "--root", root]);
 * reapWithMe(child.pid, { signal: "SIGINT", root }); // Ctrl-C, as an operator stops it
 * ```
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { startTimeOf } from "./proc-stat.js";

export interface ReapOptions {
  /** What asks it to stop first (SIGTERM by default); SIGKILL follows after `graceMs`. */
  readonly signal?: NodeJS.Signals;
  /** Signal its whole process group when it leads one (default true). */
  readonly group?: boolean;
  /** How long it has to stop before SIGKILL (default 20 s). */
  readonly graceMs?: number;
  /** Every process that names this folder (in its command line or environment) or works in it is killed after. */
  readonly root?: string;
}

const REAPER_MAIN = fileURLToPath(new URL("./reaper-main.js", import.meta.url));

let reaper: ChildProcess | undefined;

/** The reaper's pid, once one runs (for tests of the reaper). */
export function reaperPid(): number | undefined {
  return reaper?.pid;
}

/** Ends `pid` once this process is gone, unless it ended before. */
export function reapWithMe(pid: number | undefined, options: ReapOptions = {}): void {
  if (pid === undefined) return;
  const startTime = startTimeOf(pid);
  if (startTime === undefined) return; // gone already
  reaper ??= startReaper();
  const entry = {
    pid,
    startTime,
    signal: options.signal ?? "SIGTERM",
    group: options.group ?? true,
    graceMs: options.graceMs ?? 20_000,
    ...(options.root === undefined ? {} : { root: options.root }),
  };
  reaper.stdin?.write(`${JSON.stringify(entry)}\n`);
}

/**
 * Deletes every network namespace whose name starts with `prefix` once this process is gone
 * (after the registered processes are ended): a fleet's namespaces, veth links and their
 * addresses do not outlive the run that made them.
 */
export function reapNetnsWithMe(prefix: string): void {
  if (!/^[A-Za-z0-9_.-]+-$/.test(prefix)) {
    throw new Error(
      `a namespace prefix must end in "-" and hold only A-Z a-z 0-9 _ . -, got ${prefix}`,
    );
  }
  reaper ??= startReaper();
  reaper.stdin?.write(`${JSON.stringify({ netnsPrefix: prefix })}\n`);
}

function startReaper(): ChildProcess {
  const child = spawn(process.execPath, [REAPER_MAIN], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  child.on("error", () => undefined);
  child.stdin?.on("error", () => undefined);
  // Neither the reaper nor its pipe keeps this process alive.
  child.unref();
  (child.stdin as unknown as Socket | null)?.unref();
  return child;
}
