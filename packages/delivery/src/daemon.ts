/**
 * Running one of the delivery daemons as a process on its credential file: the kit's process
 * shell (its logger, the stop on SIGTERM or SIGINT with a grace period, the exit code) around the
 * daemon's `run({ signal })`.
 */
import { MeshBus } from "@mesh/bus";
import { loggerFrom, runProcess, type Daemon } from "@mesh/kit";

export interface ProcessOptions {
  readonly credential: string;
  /** How long the daemon may take to stop after SIGTERM before the process exits anyway. */
  readonly graceMs?: number;
  readonly log?: (line: string) => void;
}

/**
 * Runs a daemon as this process: connects with the credential file (waiting for the bus when it
 * is not up yet), runs it, and stops it on SIGTERM or SIGINT. Returns the exit code.
 */
export function runDaemonProcess(
  name: string,
  options: ProcessOptions,
  make: (bus: MeshBus, log: (line: string) => void) => Promise<Daemon>,
): Promise<number> {
  return runProcess(
    {
      name,
      graceMs: options.graceMs ?? 10_000,
      ...(options.log === undefined ? {} : { log: loggerFrom(options.log) }),
    },
    async ({ signal, log }) => {
      await using bus = await MeshBus.connectWithFile(options.credential, {
        waitForBus: true,
        name: `${name}`,
        signal,
      });
      const daemon = await make(bus, log);
      await daemon.run({ signal });
      log("stopped");
    },
  );
}
