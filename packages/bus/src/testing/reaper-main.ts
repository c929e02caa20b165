/**
 * The reaper's process (reaper.ts): reads what to reap from stdin, one JSON line per process,
 * and when stdin ends — the test process that started it is gone, however it went (a runner's
 * timeout, SIGKILL, or a normal end) — ends each one still alive: the signal it was given, a
 * grace, then SIGKILL to it and to every process that names its root. A process is recognised
 * by its pid and start time, so a reused pid is never signalled.
 */
import { execFileSync } from "node:child_process";
import { readdir } from "node:fs/promises";
import { createInterface } from "node:readline";
import { processesNaming, procStatFields, startTimeOf } from "./proc-stat.js";

interface Entry {
  readonly pid: number;
  readonly startTime: string;
  readonly signal: NodeJS.Signals;
  /** Signal its process group (when it leads one) rather than itself alone. */
  readonly group: boolean;
  readonly graceMs: number;
  /** A folder: every process whose command line or environment names it, or that works in it, is killed after. */
  readonly root?: string;
}

function groupOf(pid: number): number | undefined {
  const fields = procStatFields(pid);
  return fields === undefined ? undefined : Number(fields[2]);
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone meanwhile
  }
}

function alive(entry: Entry): boolean {
  return startTimeOf(entry.pid) === entry.startTime;
}

async function reap(entry: Entry): Promise<void> {
  if (!alive(entry)) return;
  const leads = entry.group && groupOf(entry.pid) === entry.pid;
  kill(leads ? -entry.pid : entry.pid, entry.signal);
  const until = Date.now() + entry.graceMs;
  while (Date.now() < until && alive(entry)) await new Promise((r) => setTimeout(r, 100));
  if (alive(entry)) kill(leads ? -entry.pid : entry.pid, "SIGKILL");
}

/** Deletes the network namespaces named `<prefix>…` (a fleet's: reapNetnsWithMe). */
async function deleteNetns(prefix: string): Promise<void> {
  const names = (await readdir("/run/netns").catch(() => [] as string[])).filter((n) =>
    n.startsWith(prefix),
  );
  for (const name of names) {
    try {
      execFileSync("ip", ["netns", "del", name], { stdio: "ignore", timeout: 10_000 });
    } catch {
      // gone meanwhile, or not ours to delete
    }
  }
}

/**
 * Each process first (so a mesh stops its own), then whatever still names a root, then the
 * namespaces (their processes are gone, so nothing holds them).
 */
async function reapAll(): Promise<void> {
  await Promise.all(entries.map((e) => reap(e).catch(() => undefined)));
  const roots = new Set(entries.flatMap((e) => (e.root === undefined ? [] : [e.root])));
  for (const root of roots) for (const pid of await processesNaming(root)) kill(pid, "SIGKILL");
  for (const prefix of netnsPrefixes) await deleteNetns(prefix);
}

const entries: Entry[] = [];
const netnsPrefixes: string[] = [];
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  try {
    const parsed = JSON.parse(line) as Entry | { netnsPrefix: string };
    if ("netnsPrefix" in parsed) netnsPrefixes.push(parsed.netnsPrefix);
    else entries.push(parsed);
  } catch {
    // not ours
  }
});
lines.once("close", () => {
  void reapAll().finally(() => process.exit(0));
});
// Ctrl-C of the test's terminal reaches its group, not this one; anything else must not stop it
// before it has reaped.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => undefined);
