/**
 * What the three delivery daemons share: named lifecycle states, and running one as a process on
 * its credential file with a graceful stop on SIGTERM or SIGINT.
 */
import { MeshBus } from "@mesh/bus";
import { MeshError, ErrorCode } from "@mesh/protocol";

export const DaemonState = {
  starting: "starting",
  running: "running",
  stopping: "stopping",
  stopped: "stopped",
  failed: "failed",
} as const;
export type DaemonState = (typeof DaemonState)[keyof typeof DaemonState];

export interface Daemon {
  readonly state: DaemonState;
  /** Works until the signal aborts (then resolves) or something it cannot work without fails (then rejects). */
  run(options: { signal: AbortSignal }): Promise<void>;
}

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
export async function runDaemonProcess(
  name: string,
  options: ProcessOptions,
  make: (bus: MeshBus, log: (line: string) => void) => Promise<Daemon>,
): Promise<number> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${name}: ${line}\n`));
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping`);
    stop.abort();
    // A daemon that does not stop within its grace is not waited for any longer.
    setTimeout(() => process.exit(1), options.graceMs ?? 10_000).unref();
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    await using bus = await MeshBus.connectWithFile(options.credential, {
      waitForBus: true,
      name: `${name}`,
      signal: stop.signal,
    });
    const daemon = await make(bus, log);
    await daemon.run({ signal: stop.signal });
    log("stopped");
    return 0;
  } catch (error) {
    if (stop.signal.aborted) return 0;
    const mesh =
      error instanceof MeshError
        ? error
        : new MeshError(ErrorCode.INTERNAL, String((error as Error).stack ?? error), {
            cause: error,
          });
    log(`failed: ${mesh.message} [${mesh.code}]`);
    return 1;
  } finally {
    process.removeListener("SIGTERM", onSignal);
    process.removeListener("SIGINT", onSignal);
  }
}

/** Resolves when the signal aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
