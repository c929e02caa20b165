/**
 * A process's start time as Linux keeps it (`/proc/<pid>/stat`, field 22, in clock ticks since
 * boot): with the pid, it names one process, so a test never signals a later process that got
 * a recycled pid. Undefined when the process is gone or a zombie.
 */
import { readFileSync } from "node:fs";
import { readdir, readFile, readlink } from "node:fs/promises";

/** The fields of `/proc/<pid>/stat` after the command name (field 3 on), or undefined. */
export function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The start time of a live process `pid`; undefined once it is gone (or only a zombie). */
export function startTimeOf(pid: number): string | undefined {
  const fields = procStatFields(pid);
  return fields === undefined || fields[0] === "Z" ? undefined : fields[19];
}

/**
 * Pids of the processes, but this one, whose command line or environment names `path`, or that
 * work in it, sorted: what a test (or the reaper) kills after the processes it started, so
 * nothing they started in turn outlives it.
 */
export async function processesNaming(path: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    const environ = await readFile(`/proc/${entry}/environ`, "utf8").catch(() => "");
    // A module process a host started may name nothing of the root but work in it (its bundle).
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => "");
    if (cmdline.includes(path) || environ.includes(path) || cwd.startsWith(path))
      found.push(Number(entry));
  }
  return found.sort((a, b) => a - b);
}
