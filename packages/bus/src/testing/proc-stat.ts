/**
 * A process's start time as Linux keeps it (`/proc/<pid>/stat`, field 22, in clock ticks since
 * boot): with the pid, it names one process, so a test never signals a later process that got
 * a recycled pid. Undefined when the process is gone or a zombie.
 */
import { readFileSync } from "node:fs";

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
