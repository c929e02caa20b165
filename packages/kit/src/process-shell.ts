/**
 * The process shell every daemon's `main` goes through: a logger named after the process, the
 * kit's stop on signals (the first SIGINT/SIGTERM aborts the signal `main` works under; a second
 * one, or a stop that outlasts the grace period, ends the process), and one mapping from how
 * `main` ended to the exit code: what it returned (0 when nothing), 0 when it threw after the
 * stop began, 2 for a `USAGE` error, 1 for any other, said once in the log with its code.
 *
 * ```ts
 * process.exitCode = await runProcess({ name: "mesh-indexer" }, async ({ signal, log }) => {
 *   const indexer = await Indexer.create({ bus, log: log.child("indexer") });
 *   await indexer.run({ signal });
 * });
 * ```
 */
import { ErrorCode, MeshError } from "@mesh/protocol";
import { createLogger, type Logger } from "./logger.js";
import { runUntilSignal, type SignalStopOptions } from "./signals.js";

export interface ProcessShellOptions extends Omit<SignalStopOptions, "log" | "name"> {
  /** How the process is named in its log. */
  readonly name: string;
  /** Where the process says what it does; `<name>: …` on stderr by default. */
  readonly log?: Logger;
}

/** What `main` works with. */
export interface ProcessContext {
  /** Aborted by the first stop signal. */
  readonly signal: AbortSignal;
  /** The process's logger; hand children of it to the parts `main` builds. */
  readonly log: Logger;
}

/** Exit codes, as every mesh process uses them. */
export const ExitCode = { done: 0, failed: 1, usage: 2 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Runs `main` as the process; resolves to its exit code (never rejects). */
export async function runProcess(
  options: ProcessShellOptions,
  main: (context: ProcessContext) => Promise<number | void>,
): Promise<number> {
  const { name, log: given, ...stop } = options;
  const log = given ?? createLogger({ name });
  return runUntilSignal({ ...stop, name, log }, async (signal) => {
    try {
      return (await main({ signal, log })) ?? ExitCode.done;
    } catch (error) {
      if (signal.aborted) return ExitCode.done;
      return failed(log, error);
    }
  });
}

function failed(log: Logger, error: unknown): number {
  const mesh =
    error instanceof MeshError
      ? error
      : new MeshError(ErrorCode.INTERNAL, String((error as Error).stack ?? error), {
          cause: error,
        });
  log(`failed: ${mesh.message} [${mesh.code}]`);
  return mesh.code === ErrorCode.USAGE ? ExitCode.usage : ExitCode.failed;
}
