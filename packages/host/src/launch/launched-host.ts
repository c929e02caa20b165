/**
 * A host build run by a launcher (decision 0200; the words are wire.ts's). A standby waits for
 * `take-over` before it touches anything of the node. Then the host runs; when the launcher asks
 * it to `park` it lets go of the node (its processes stay as they are) and waits: `exit` ends it,
 * `resume` takes the node again — the processes adopted once more from the saved state, and the
 * build that failed said as a condition. A launcher that is gone is a let-go and an end.
 */
import type { RunOptions } from "@mesh/kit";
import { Host } from "../host.js";
import { HOST_VERSION } from "../connection.js";
import type { HostOptions } from "../host-options.js";
import type { LauncherLink } from "./launcher-link.js";
import type { FailedBuild } from "./wire.js";

export async function runLaunchedHost(
  options: HostOptions,
  link: LauncherLink,
  { signal }: RunOptions,
): Promise<void> {
  const stop = AbortSignal.any([signal, link.gone]);
  try {
    const tookOver = link.standby;
    if (tookOver && !(await link.takeOver(HOST_VERSION, stop))) return;
    let resumedFrom: FailedBuild | undefined;
    for (;;) {
      const host = await Host.create({
        ...options,
        launcher: link,
        ...(resumedFrom === undefined ? {} : { resumedFrom }),
      });
      void sayHowItRuns(host, link, tookOver && resumedFrom === undefined);
      await host.run({ signal: stop });
      if (stop.aborted || !host.leftNode) return;
      link.parked();
      const next = await link.afterPark(stop);
      if (next?.t !== "resume") return;
      resumedFrom = next.failed;
    }
  } finally {
    link.close();
  }
}

/** Tells the launcher the host runs, and, after a take-over, that it is healthy. */
async function sayHowItRuns(host: Host, link: LauncherLink, tookOver: boolean): Promise<void> {
  await host.started();
  link.running();
  if (!tookOver) return;
  await host.healthy();
  link.healthy();
}
