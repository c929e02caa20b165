/** Reading the runtime's status file in tests, as the host does: on every change of its folder. */
import { watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { RuntimeStatus } from "../runtime.js";

/** The status file's content now. */
export async function readStatus(file: string): Promise<RuntimeStatus> {
  return JSON.parse(await readFile(file, "utf8")) as RuntimeStatus;
}

/** Resolves with the status file's content once it matches; re-read on every change of its folder. */
export function statusUntil(
  file: string,
  match: (s: RuntimeStatus) => boolean,
): Promise<RuntimeStatus> {
  return new Promise((resolve, reject) => {
    let done = false;
    const check = async (): Promise<void> => {
      if (done) return;
      let status: RuntimeStatus;
      try {
        status = await readStatus(file);
      } catch {
        return; // not written yet
      }
      if (!done && match(status)) {
        done = true;
        watcher.close();
        resolve(status);
      }
    };
    const watcher = watch(dirname(file), () => void check());
    watcher.on("error", reject);
    void check();
  });
}
