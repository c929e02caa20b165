/**
 * A host build's side of its launcher (decision 0200; the words are wire.ts's): which build this
 * process is, whether it is a standby, the builds that did not take the node over, and the
 * messages of a handover. A host run without a launcher (by hand, or in a test) has no link and
 * cannot hand over.
 */
import { within } from "@mesh/kit";
import { FailedBuild, FromLauncher, LaunchEnv, readMessage, type FromHost } from "./wire.js";

type AfterPark = Extract<FromLauncher, { t: "exit" | "resume" }>;

export class LauncherLink {
  /** The digest of the build this process runs; undefined for the CLI's own of no known digest. */
  readonly build: string | undefined;
  /** Whether this process was started as a standby (it waits for `take-over`). */
  readonly standby: boolean;
  readonly #process: NodeJS.Process;
  readonly #failed = new Map<string, string>();
  readonly #gone = new AbortController();
  readonly #inbox: FromLauncher[] = [];
  #arrived: () => void = () => undefined;
  #asked: string | undefined;
  #onPark: (() => void) | undefined;
  #onNotUpgraded: ((failed: FailedBuild) => void) | undefined;

  private constructor(proc: NodeJS.Process) {
    this.#process = proc;
    const env = proc.env;
    this.build = env[LaunchEnv.build] === "" ? undefined : env[LaunchEnv.build];
    this.standby = env[LaunchEnv.standby] === "1";
    for (const f of parseFailed(env[LaunchEnv.failed])) this.#failed.set(f.digest, f.reason);
    proc.on("message", (raw: unknown) => this.#heard(readMessage(FromLauncher, raw)));
    proc.once("disconnect", () => {
      this.#gone.abort();
      this.#arrived();
    });
  }

  /** This process's link, when a launcher started it (and its channel is open). */
  static ofThisProcess(): LauncherLink | undefined {
    if (process.env[LaunchEnv.launched] !== "1" || process.send === undefined) return undefined;
    if (!process.connected) return undefined;
    return new LauncherLink(process);
  }

  /** Aborts when the launcher is gone (its channel closed): the host lets go and ends. */
  get gone(): AbortSignal {
    return this.#gone.signal;
  }

  /** Why `digest` did not take this node over, when it did not. */
  failedReason(digest: string): string | undefined {
    return this.#failed.get(digest);
  }

  /** The builds that failed here but `named` (the one the composition names) are forgotten. */
  forgetBut(named: string | undefined): void {
    for (const digest of [...this.#failed.keys()]) {
      if (digest === named) continue;
      this.#failed.delete(digest);
      this.#say({ t: "forget", digest });
    }
  }

  /** Asks for a handover to `digest` (once while it is asked). */
  upgrade(digest: string, entry: string): void {
    if (this.#asked === digest) return;
    this.#asked = digest;
    this.#say({ t: "upgrade", digest, entry });
  }

  /** Whether a handover to `digest` is asked and not answered yet. */
  asked(digest: string): boolean {
    return this.#asked === digest;
  }

  onPark(listener: () => void): void {
    this.#onPark = listener;
  }

  onNotUpgraded(listener: (failed: FailedBuild) => void): void {
    this.#onNotUpgraded = listener;
  }

  /** A standby: says it is ready, then waits for `take-over`; false when it never comes. */
  async takeOver(version: string, signal: AbortSignal): Promise<boolean> {
    this.#say({ t: "standby-ready", version });
    for (;;) {
      const message = await this.#next(signal);
      if (message === undefined) return false;
      if (message.t === "take-over") return true;
      if (message.t === "exit") return false;
    }
  }

  /** After `parked`: whether to end (`exit`) or take the node again (`resume`), or undefined. */
  async afterPark(signal: AbortSignal): Promise<AfterPark | undefined> {
    for (;;) {
      const message = await this.#next(signal);
      if (message === undefined) return undefined;
      if (message.t === "exit" || message.t === "resume") {
        this.#asked = undefined;
        if (message.t === "resume" && message.failed !== undefined)
          this.#failed.set(message.failed.digest, message.failed.reason);
        return message;
      }
    }
  }

  running(): void {
    this.#say({ t: "running" });
  }
  healthy(): void {
    this.#say({ t: "healthy" });
  }
  parked(): void {
    this.#say({ t: "parked" });
  }

  /** Closes the channel, so the process can end. */
  close(): void {
    if (this.#process.connected) this.#process.disconnect();
  }

  #heard(message: FromLauncher | undefined): void {
    if (message === undefined) return;
    if (message.t === "park") {
      this.#onPark?.();
      return;
    }
    if (message.t === "not-upgraded") {
      this.#asked = undefined;
      this.#failed.set(message.failed.digest, message.failed.reason);
      this.#onNotUpgraded?.(message.failed);
      return;
    }
    this.#inbox.push(message);
    this.#arrived();
  }

  /** The next message kept for a wait, or undefined once the launcher is gone or `signal` aborts. */
  async #next(signal: AbortSignal): Promise<FromLauncher | undefined> {
    const stop = AbortSignal.any([signal, this.#gone.signal]);
    while (this.#inbox.length === 0) {
      if (stop.aborted) return undefined;
      const arrived = new Promise<void>((resolve) => (this.#arrived = resolve));
      await within(arrived, 60_000, undefined, { signal: stop });
    }
    return this.#inbox.shift();
  }

  #say(message: FromHost): void {
    if (!this.#process.connected) return;
    this.#process.send?.(message, undefined, {}, () => undefined);
  }
}

function parseFailed(text: string | undefined): FailedBuild[] {
  if (text === undefined || text === "") return [];
  try {
    const parsed = FailedBuild.array().safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}
