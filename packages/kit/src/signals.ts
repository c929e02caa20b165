/**
 * One way a process stops: the first SIGINT or SIGTERM aborts a signal (the daemon's
 * `run({ signal })` then winds down); a second one, or a stop that outlasts the grace period,
 * ends the process at once.
 *
 * ```ts
 * process.exitCode = await runUntilSignal({ name: "mesh-controller" }, (signal) =>
 *   controller.run({ signal }).then(() => 0),
 * );
 * ```
 */

/** What a process's stop hears; `process` itself, or a stand-in in tests. */
export interface SignalSource {
  on(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface SignalStopOptions {
  /** How the process is named in what it says on stderr. */
  readonly name: string;
  /**
   * How long a stop may take after the first signal before the process exits anyway; default
   * 10 s. A function is asked when the first signal comes (a process whose stop changes as it
   * goes: a standby runtime leaves at once, the runtime it becomes drains its calls first).
   */
  readonly graceMs?: number | (() => number);
  /** Where the stop is said (without the name); `<name>: …` on stderr by default. */
  readonly log?: (line: string) => void;
  /**
   * What the first signal starts, as said after it (`SIGTERM: stopping`); `stopping` by default.
   * A function is asked when the first signal comes, as `graceMs` is.
   */
  readonly doing?: string | (() => string);
  /** The signals that stop; SIGINT and SIGTERM by default. */
  readonly signals?: readonly NodeJS.Signals[];
  /** Ends the process when it did not stop in time; `process.exit` by default. */
  readonly exit?: (code: number) => void;
  /** Where signals come from; `process` by default. */
  readonly source?: SignalSource;
}

/** The default grace period between the first signal and a forced exit. */
export const DEFAULT_GRACE_MS = 10_000;

/** An abort signal the process's signals trip; dispose it once the stop is done. */
export interface SignalStop extends Disposable {
  readonly signal: AbortSignal;
}

/** The exit code of a process ended by `signal`, as a shell reports it (128 + its number). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 1;
}

/** Listens for the stop signals until disposed. */
export function stopOnSignals(options: SignalStopOptions): SignalStop {
  const source = options.source ?? process;
  const signals = options.signals ?? ["SIGINT", "SIGTERM"];
  const log = options.log ?? ((line: string) => process.stderr.write(`${options.name}: ${line}\n`));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const stopping = new AbortController();
  let grace: NodeJS.Timeout | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping.signal.aborted) {
      log(`${signal} again: exiting without waiting`);
      exit(signalExitCode(signal));
      return;
    }
    log(`${signal}: ${now(options.doing) ?? "stopping"}`);
    stopping.abort(signal);
    const graceMs = now(options.graceMs) ?? DEFAULT_GRACE_MS;
    grace = setTimeout(() => {
      log(`did not stop within ${graceMs} ms; exiting`);
      exit(1);
    }, graceMs);
    grace.unref();
  };
  for (const signal of signals) source.on(signal, onSignal);
  return {
    signal: stopping.signal,
    [Symbol.dispose]() {
      clearTimeout(grace);
      for (const signal of signals) source.off(signal, onSignal);
    },
  };
}

/** An option's value now: itself, or what its function says. */
function now<T extends string | number>(option: T | (() => T) | undefined): T | undefined {
  return typeof option === "function" ? option() : option;
}

/** Runs `body` with a signal the process's stop signals abort; resolves to what it returns. */
export async function runUntilSignal<T>(
  options: SignalStopOptions,
  body: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  using stop = stopOnSignals(options);
  return await body(stop.signal);
}
