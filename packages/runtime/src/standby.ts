/**
 * A standby runtime's wait (README.md, "Standby"): loaded, connected, its spare worker booted, it
 * says so and waits to be told to serve. The host tells it over the IPC channel it started it
 * with (`{t: "serve", env}`: the environment of the runtime's composition now, which the
 * standby takes before it reads its modules), or with SIGUSR2 (serve as started). SIGTERM or
 * SIGINT (the process shell's stop, whose grace period ends a leave that hangs), or the host's
 * channel closing (the host is gone, and the next one ends what it did not record), end it.
 */
import type { SpareWorker } from "./spare-worker.js";

/** What the host says to a standby over its IPC channel. */
export interface ServeMessage {
  readonly t: "serve";
  /** The variables to set and to remove before the standby reads its environment. */
  readonly env?: {
    readonly set: Readonly<Record<string, string>>;
    readonly unset: readonly string[];
  };
}

/** What a standby says to the host once it is ready to take over. */
export const STANDBY_READY = { t: "standby-ready" } as const;

/** How a standby was told to serve; undefined when it was told to leave. */
export interface Handover {
  readonly env?: ServeMessage["env"];
}

/** How long a standby waits for its spare worker before it says it is ready without one. */
const SPARE_WAIT_MS = 10_000;

/**
 * Waits to be told to serve or to leave (`signal` aborting is a leave). The SIGUSR2 handler is
 * set, and the host told, only once the spare worker is booted: the host, which reads whether
 * that handler is set, never signals a standby that would not survive it.
 */
export async function standBy(
  spare: SpareWorker,
  { signal }: { readonly signal: AbortSignal },
): Promise<Handover | undefined> {
  spare.prepare();
  await spare.whenReady(SPARE_WAIT_MS);
  let resolve: (handover: Handover | undefined) => void = () => undefined;
  const told = new Promise<Handover | undefined>((r) => (resolve = r));
  const serve = (): void => resolve({});
  const leave = (): void => resolve(undefined);
  const message = (m: Partial<ServeMessage> | null): void => {
    if (m?.t === "serve") resolve(m.env === undefined ? {} : { env: m.env });
  };
  if (signal.aborted) leave();
  else signal.addEventListener("abort", leave, { once: true });
  process.on("SIGUSR2", serve);
  if (process.send !== undefined) {
    process.on("message", message).on("disconnect", leave);
    // The host may be gone already (killed while the spare worker booted): then no one is told,
    // and the standby leaves as it does when the channel closes, never on an unhandled error.
    if (process.connected) process.send(STANDBY_READY, undefined, {}, (error) => error && leave());
    else leave();
  }
  process.stderr.write(`[node-tools] standing by (pid ${process.pid})\n`);
  const handover = await told;
  signal.removeEventListener("abort", leave);
  process.off("SIGUSR2", serve);
  process.off("message", message).off("disconnect", leave);
  // From here on the process is the runtime: it outlives the host that started it.
  if (process.connected) process.disconnect();
  if (handover !== undefined)
    process.stderr.write(`[node-tools] taking over (pid ${process.pid})\n`);
  return handover;
}
