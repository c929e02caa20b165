/**
 * What the host asks the kernel about processes, through /proc (Linux). A pid alone names a
 * process only until it exits and the number is reused; a pid with its start time (field 22 of
 * /proc/<pid>/stat, in clock ticks since boot) names one process for good. The host records
 * both, and never signals a pid whose start time is not the one it recorded.
 */
import { readFile, readdir } from "node:fs/promises";
import { delay } from "@mesh/kit";

/** One process as the kernel knows it, for as long as it lives. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTime: string;
}

/** The start time and process group of `pid`, or undefined when it is gone (or a zombie). */
export async function statOf(
  pid: number,
): Promise<{ startTime: string; pgid: number } | undefined> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces or ")": split after the last ")".
  const close = stat.lastIndexOf(")");
  const fields = stat.slice(close + 2).split(" ");
  // fields[0] is field 3 (state), fields[2] field 5 (pgrp), fields[19] field 22 (starttime).
  const startTime = fields[19];
  if (fields[0] === "Z" || fields[0] === "X" || startTime === undefined) return undefined;
  return { startTime, pgid: Number(fields[2]) };
}

/** The start time of `pid`, or undefined when no such process lives (or it is a zombie). */
export async function startTimeOf(pid: number): Promise<string | undefined> {
  return (await statOf(pid))?.startTime;
}

/** Whether the very process `identity` names is alive. */
export async function isAlive(identity: ProcessIdentity): Promise<boolean> {
  return (await startTimeOf(identity.pid)) === identity.startTime;
}

/**
 * Signals the process group led by `identity.pid`, but only when that pid is still the process
 * that was recorded: a reused pid belongs to someone else. Returns whether it was signalled.
 */
export async function signalGroup(
  identity: ProcessIdentity,
  signal: NodeJS.Signals,
): Promise<boolean> {
  if (!(await isAlive(identity))) return false;
  try {
    process.kill(-identity.pid, signal);
    return true;
  } catch {
    try {
      // The leader may have left its group (setsid); signal it alone.
      process.kill(identity.pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * Every live process group leader whose environment holds `name=<value>` with `value` starting
 * with `prefix`, and that value. Only leaders: a supervised process's own children inherit its
 * environment but live in its group, and go with it. How a restarted host finds processes it started but could not
 * record (killed between spawn and writing its state).
 */
export async function processesMarked(
  name: string,
  prefix: string,
): Promise<Array<ProcessIdentity & { readonly value: string }>> {
  const out: Array<ProcessIdentity & { value: string }> = [];
  const needle = `${name}=${prefix}`;
  for (const entry of await readdir("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let environ: string;
    try {
      environ = await readFile(`/proc/${pid}/environ`, "latin1");
    } catch {
      continue; // gone, or not ours to read
    }
    const found = environ.split("\0").find((v) => v.startsWith(needle));
    if (found === undefined) continue;
    const stat = await statOf(pid);
    if (stat !== undefined && stat.pgid === pid)
      out.push({ pid, startTime: stat.startTime, value: found.slice(name.length + 1) });
  }
  return out;
}

/**
 * Ends the group led by `identity`: TERM, up to `graceMs` for it to go, then KILL. For a process
 * the host is not the parent of (it cannot wait for it), so its end is seen in /proc.
 */
export async function endGroup(identity: ProcessIdentity, graceMs: number): Promise<void> {
  if (!(await signalGroup(identity, "SIGTERM"))) return;
  const until = Date.now() + graceMs;
  while (Date.now() < until) {
    if (!(await isAlive(identity))) return;
    await delay(50);
  }
  await signalGroup(identity, "SIGKILL");
}
