/**
 * Running one of the three delivery daemons as a process on its credential file: the kit's
 * signal stop (SIGTERM or SIGINT, with a grace period) around the kit's `run({ signal })`.
 */
import { MeshBus } from "@mesh/bus";
import { runUntilSignal, type Daemon } from "@mesh/kit";
import { MeshError, ErrorCode } from "@mesh/protocol";

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
  const log = options.log ?? ((line: string) => process.stderr.write(`${name}: ${line}\n`));
  return runUntilSignal({ name, log, graceMs: options.graceMs ?? 10_000 }, async (signal) => {
    try {
      await using bus = await MeshBus.connectWithFile(options.credential, {
        waitForBus: true,
        name: `${name}`,
        signal,
      });
      const daemon = await make(bus, log);
      await daemon.run({ signal });
      log("stopped");
      return 0;
    } catch (error) {
      if (signal.aborted) return 0;
      const mesh =
        error instanceof MeshError
          ? error
          : new MeshError(ErrorCode.INTERNAL, String((error as Error).stack ?? error), {
              cause: error,
            });
      log(`failed: ${mesh.message} [${mesh.code}]`);
      return 1;
    }
  });
}
