/**
 * One host build the launcher runs: its process (a group of its own, so a terminal's Ctrl-C
 * reaches the launcher alone, which stops the host once), its IPC channel, and what it said and
 * did, in order. The launcher reads it one event at a time; nothing it says is lost while the
 * launcher waits for something else.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { within } from "@mesh/kit";
import { FromHost, LaunchEnv, readMessage, type FailedBuild, type FromLauncher } from "./wire.js";
import type { Build } from "./launch-state.js";

/** Something a build process did: said a message, or exited. */
export type BuildEvent =
  | { readonly kind: "said"; readonly message: FromHost }
  | { readonly kind: "exited"; readonly code: number | null; readonly signal: string | null };

/** How to start a build: the command before the host's arguments. */
export interface BuildCommand {
  readonly argv: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** The digest the build is (told to it as MESH_HOST_BUILD). */
  readonly digest?: string;
}

export class BuildProcess {
  /** The build it runs (the version it said is added once it takes the node over). */
  build: Build;
  readonly child: ChildProcess;
  /** Whether it said it runs (it started and adopted what it found). */
  ran = false;
  readonly #events: BuildEvent[] = [];
  #arrived: () => void = () => undefined;
  #exit: Extract<BuildEvent, { kind: "exited" }> | undefined;
  readonly #gone: Promise<void>;

  private constructor(build: Build, child: ChildProcess) {
    this.build = build;
    this.child = child;
    child.on("message", (raw: unknown) => {
      const message = readMessage(FromHost, raw);
      if (message === undefined) return; // a newer build's word this launcher does not know
      if (message.t === "running") this.ran = true;
      this.#push({ kind: "said", message });
    });
    child.on("error", () => undefined); // a send to a process that is gone; its exit says the rest
    this.#gone = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.#exit = { kind: "exited", code, signal };
        this.#push(this.#exit);
        resolve();
      });
    });
  }

  /** Starts `build` with the host's arguments; resolves once it runs (rejects when it cannot start). */
  static async start(input: {
    readonly build: Build;
    readonly command: BuildCommand;
    readonly args: readonly string[];
    readonly standby: boolean;
    readonly failed: readonly FailedBuild[];
  }): Promise<BuildProcess> {
    const [file, ...pre] = input.command.argv;
    const child = spawn(file ?? process.execPath, [...pre, ...input.args], {
      detached: true,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: {
        ...process.env,
        ...input.command.env,
        [LaunchEnv.launched]: "1",
        ...(input.command.digest === undefined ? {} : { [LaunchEnv.build]: input.command.digest }),
        ...(input.standby ? { [LaunchEnv.standby]: "1" } : {}),
        [LaunchEnv.failed]: JSON.stringify(input.failed),
      },
    });
    const proc = new BuildProcess(input.build, child);
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", reject);
    });
    return proc;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** How it exited, once it has. */
  get exit(): Extract<BuildEvent, { kind: "exited" }> | undefined {
    return this.#exit;
  }

  /** Tells it `message`; false when it cannot hear any more. */
  send(message: FromLauncher): Promise<boolean> {
    if (!this.child.connected) return Promise.resolve(false);
    return new Promise((resolve) => this.child.send(message, (error) => resolve(error === null)));
  }

  /** The next thing it did, or undefined once `ms` passed or `signal` aborted first. */
  async next(ms: number, signal?: AbortSignal): Promise<BuildEvent | undefined> {
    if (this.#events.length === 0) {
      const arrived = new Promise<void>((resolve) => (this.#arrived = resolve));
      await within(arrived, ms, undefined, signal === undefined ? {} : { signal });
    }
    return this.#events.shift();
  }

  /**
   * Waits until it says `t` (what it says meanwhile is handed to `aside`), it exits, `ms` pass or
   * `signal` aborts: the message, or why not.
   */
  async said<T extends FromHost["t"]>(
    t: T,
    ms: number,
    signal: AbortSignal,
    aside: (message: FromHost) => void,
  ): Promise<Extract<FromHost, { t: T }> | "exited" | "timeout" | "stopped"> {
    const until = Date.now() + ms;
    for (;;) {
      const left = until - Date.now();
      if (signal.aborted) return "stopped";
      if (left <= 0) return "timeout";
      const event = await this.next(left, signal);
      if (event === undefined) continue;
      if (event.kind === "exited") return "exited";
      if (event.message.t === t) return event.message as Extract<FromHost, { t: T }>;
      aside(event.message);
    }
  }

  /** Resolves once it has exited, or after `ms` (false then). */
  exited(ms: number): Promise<boolean> {
    return within(
      this.#gone.then(() => true),
      ms,
      false,
    );
  }

  /** Ends it at once (SIGKILL to its own pid: the node's processes are in groups of their own). */
  kill(): Promise<void> {
    return this.#signalAndWait("SIGKILL");
  }

  /** Asks it to stop (SIGTERM), and waits for its exit. */
  terminate(): Promise<void> {
    return this.#signalAndWait("SIGTERM");
  }

  /** Sends `signal` unless it exited already, and waits for its exit. */
  async #signalAndWait(signal: NodeJS.Signals): Promise<void> {
    if (this.#exit !== undefined) return;
    try {
      this.child.kill(signal);
    } catch {
      // gone meanwhile
    }
    await this.#gone;
  }

  #push(event: BuildEvent): void {
    this.#events.push(event);
    this.#arrived();
  }
}

/** How a build's exit reads in a reason: `exited with code 1` or `was ended by SIGKILL`. */
export function exitWords(exit: {
  readonly code: number | null;
  readonly signal: string | null;
}): string {
  return exit.signal === null
    ? `exited with code ${String(exit.code)}`
    : `was ended by ${exit.signal}`;
}
