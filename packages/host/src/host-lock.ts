/**
 * One host per root at a time (decision 0200): `<root>/host/host.pid` names the host that holds
 * the node (its pid and start time, so a reused pid is never taken for it). A host parked for a
 * handover lets go of it before it says so; a host whose launcher was killed lets go of it as it
 * ends; the host started meanwhile (a launcher started again) waits for it, so two hosts never
 * adopt one node's processes at once. A lock whose holder is gone is taken over.
 */
import { mkdir, open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { delay } from "@mesh/kit";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { isAlive, startTimeOf, type ProcessIdentity } from "./proc.js";

/** How long a starting host waits for the one before it to let go. */
export const HOST_LOCK_WAIT_MS = 60_000;

export const hostLockPath = (root: string): string => join(root, "host", "host.pid");

export class HostLock {
  readonly #path: string;
  readonly #me: ProcessIdentity;
  #held = true;

  private constructor(path: string, me: ProcessIdentity) {
    this.#path = path;
    this.#me = me;
  }

  /** Takes the root's lock, waiting up to `waitMs` for a live holder to let go; ROOT_IN_USE after. */
  static async take(
    root: string,
    options: {
      readonly waitMs?: number;
      readonly signal?: AbortSignal;
      readonly log: (line: string) => void;
    },
  ): Promise<HostLock> {
    const path = hostLockPath(root);
    await mkdir(join(root, "host"), { recursive: true, mode: 0o700 });
    const me: ProcessIdentity = {
      pid: process.pid,
      startTime: (await startTimeOf(process.pid)) ?? "?",
    };
    const until = Date.now() + (options.waitMs ?? HOST_LOCK_WAIT_MS);
    let said = false;
    for (;;) {
      try {
        const handle = await open(path, "wx", 0o600);
        await handle.writeFile(JSON.stringify(me));
        await handle.close();
        return new HostLock(path, me);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await holderOf(path);
      if (holder === undefined || holder.pid === me.pid || !(await isAlive(holder))) {
        await unlink(path).catch(() => undefined); // a holder that is gone
        continue;
      }
      if (!said)
        options.log(
          `waiting for the host before this one (pid ${holder.pid}) to let go of the node`,
        );
      said = true;
      if (
        Date.now() >= until ||
        !(await delay(100, options.signal === undefined ? {} : { signal: options.signal }))
      ) {
        throw new MeshError(
          ErrorCode.ROOT_IN_USE,
          `another host (pid ${holder.pid}) holds the node in ${root} and did not let go; stop it, or give this host another --root`,
          { path },
        );
      }
    }
  }

  /** Lets go (only of a lock that is still this process's). */
  async release(): Promise<void> {
    if (!this.#held) return;
    this.#held = false;
    const holder = await holderOf(this.#path);
    if (holder?.pid === this.#me.pid && holder.startTime === this.#me.startTime)
      await unlink(this.#path).catch(() => undefined);
  }
}

async function holderOf(path: string): Promise<ProcessIdentity | undefined> {
  try {
    const value = JSON.parse(await readFile(path, "utf8")) as Partial<ProcessIdentity>;
    return typeof value.pid === "number" && typeof value.startTime === "string"
      ? { pid: value.pid, startTime: value.startTime }
      : undefined;
  } catch {
    return undefined;
  }
}
