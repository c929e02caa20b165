/**
 * The host launcher (decision 0200): the small process a machine keeps running (`mesh host`,
 * `mesh join`, the host `mesh up` starts, or systemd's unit), which runs the node's host build as
 * its child and hands the node from one build to the next when the running host asks. It holds
 * nothing of the node itself, so it never needs upgrading with the host: whatever restarts it
 * (systemd, `mesh up`) starts the build it last handed the node to, from `<root>/host`.
 *
 * It starts the build of `<root>/host/launch.json` (the CLI's own when there is none), passes it
 * the host's arguments, and waits: a stop signal is passed on once (SIGTERM) and its exit code is
 * the launcher's; a host that exits by itself ends the launcher with its code, so whatever runs the
 * launcher restarts it as it restarted the host before — except a build from the root that exits
 * before it ever ran, which is set aside (failed) for the one before it. An `upgrade` from the
 * running host is a handover (wire.ts walks it through).
 */
import { access, mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { BuildProcess, exitWords, type BuildCommand } from "./build-process.js";
import { LaunchState, OWN, digestOf, type Build } from "./launch-state.js";
import { hostBuildDir, type FailedBuild, type FromHost } from "./wire.js";

/** Each step of a handover has this long by default: boot, let go, become healthy. */
export const DEFAULT_HANDOVER_STEP_MS = 60_000;

export interface LauncherOptions {
  readonly root: string;
  /** The host's arguments (`--node … --root … --credential …`), the same for every build. */
  readonly args: readonly string[];
  /** How to run the CLI's own host build (the launcher adds the arguments). */
  readonly own: BuildCommand;
  /** How long a new build has to boot, the running one to let go, and the new one to be healthy. */
  readonly stepMs?: { readonly boot?: number; readonly park?: number; readonly healthy?: number };
  readonly log: (line: string) => void;
}

/** How a handover ended: the build that runs the node now. */
type Handed = BuildProcess;

export class Launcher {
  readonly #o: LauncherOptions;
  #state: LaunchState | undefined;

  constructor(options: LauncherOptions) {
    this.#o = options;
  }

  /** Runs the node's host until `signal` aborts or it exits; resolves to the exit code. */
  async run({ signal }: { readonly signal: AbortSignal }): Promise<number> {
    await mkdir(join(this.#o.root, "host"), { recursive: true, mode: 0o700 });
    const state = await LaunchState.load(this.#o.root, this.#o.log);
    this.#state = state;
    let host = await this.#startCurrent();
    for (;;) {
      const event = await host.next(60_000, signal);
      if (signal.aborted) {
        await host.terminate();
        return codeOf(host);
      }
      if (event === undefined) continue;
      if (event.kind === "exited") {
        if (host.ran || host.build.kind === "own") return codeOf(host);
        const why = `host build ${short(digestOf(host.build))} ${exitWords(event)} before it ran`;
        this.#o.log(`${why}; the build before it runs instead`);
        await state.fellBack(why);
        host = await this.#startCurrent();
        continue;
      }
      host = await this.#heard(host, event.message, signal);
    }
  }

  /** The build the state names, or the CLI's own when its folder is gone. */
  async #startCurrent(): Promise<BuildProcess> {
    const state = this.#state as LaunchState;
    let build = state.current;
    if (build.kind === "archive" && !(await exists(this.#entryOf(build)))) {
      this.#o.log(
        `host build ${short(build.digest)} is not under ${this.#o.root}/host: the CLI's own runs`,
      );
      build = OWN;
    }
    return this.#start(build, false);
  }

  #start(build: Build, standby: boolean): Promise<BuildProcess> {
    const command: BuildCommand =
      build.kind === "own"
        ? this.#o.own
        : { argv: [process.execPath, this.#entryOf(build)], digest: build.digest };
    return BuildProcess.start({
      build,
      command,
      args: this.#o.args,
      standby,
      failed: (this.#state as LaunchState).failed,
    });
  }

  #entryOf(build: Extract<Build, { kind: "archive" }>): string {
    return join(hostBuildDir(this.#o.root, build.digest), build.entry);
  }

  /** What the running host said outside a handover. */
  async #heard(host: BuildProcess, message: FromHost, signal: AbortSignal): Promise<Handed> {
    if (message.t === "forget") await (this.#state as LaunchState).forget(message.digest);
    if (message.t !== "upgrade") return host;
    return this.#handover(host, message, signal);
  }

  /** Hands the node from `old` to the build it asked for; returns the one that runs it after. */
  async #handover(
    old: BuildProcess,
    asked: Extract<FromHost, { t: "upgrade" }>,
    signal: AbortSignal,
  ): Promise<Handed> {
    const state = this.#state as LaunchState;
    const steps = this.#o.stepMs ?? {};
    const next: Extract<Build, { kind: "archive" }> = {
      kind: "archive",
      digest: asked.digest,
      entry: asked.entry,
    };
    const failed = (reason: string): FailedBuild => ({ digest: asked.digest, reason });
    const aside = (m: FromHost): void => void this.#aside(m);
    this.#o.log(`handing the node to host build ${short(asked.digest)}`);
    let standby: BuildProcess;
    try {
      if (!(await exists(this.#entryOf(next))))
        throw new Error(`its entry ${this.#entryOf(next)} is not there`);
      standby = await this.#start(next, true);
    } catch (error) {
      return this.#notUpgraded(old, failed(`it could not be started: ${(error as Error).message}`));
    }
    const bootMs = steps.boot ?? DEFAULT_HANDOVER_STEP_MS;
    const ready = await standby.said("standby-ready", bootMs, signal, aside);
    if (typeof ready === "string") {
      await standby.kill();
      const reason = why(ready, standby, {
        timeout: `it did not say it was ready within ${bootMs} ms`,
        exited: "before it said it was ready",
      });
      return this.#notUpgraded(old, failed(reason));
    }
    const version = ready.version;
    await old.send({ t: "park" });
    const parkMs = steps.park ?? DEFAULT_HANDOVER_STEP_MS;
    const parked = await old.said("parked", parkMs, signal, aside);
    if (parked === "timeout" || parked === "stopped") {
      await standby.kill();
      return this.#resume(
        old,
        failed(`the host it was to take over from did not let go within ${parkMs} ms`),
      );
    }
    // Parked, or the old host is gone: the node is the new build's to take.
    await standby.send({ t: "take-over" });
    const healthyMs = steps.healthy ?? DEFAULT_HANDOVER_STEP_MS;
    const healthy = await standby.said("healthy", healthyMs, signal, aside);
    if (typeof healthy === "string") {
      await standby.kill();
      const f = failed(
        why(healthy, standby, {
          timeout: `it did not say it was healthy within ${healthyMs} ms of taking the node over`,
          exited: "after it took the node over, before it was healthy",
        }),
      );
      if (parked !== "exited") return this.#resume(old, f);
      await state.failedBuild(f);
      return this.#start(old.build, false);
    }
    const took = { ...next, ...(version === "" ? {} : { version }) };
    await state.tookOver(took, old.build);
    if (parked !== "exited") {
      await old.send({ t: "exit" });
      if (!(await old.exited(30_000))) await old.kill();
    }
    this.#o.log(`host build ${short(asked.digest)} (version ${version}) runs the node`);
    await this.#prune([asked.digest, digestOf(old.build)]);
    standby.build = took;
    standby.ran = true;
    return standby;
  }

  async #aside(message: FromHost): Promise<void> {
    if (message.t === "forget") await (this.#state as LaunchState).forget(message.digest);
  }

  /** The old host never let go: it is told the build failed, and runs on. */
  async #notUpgraded(old: BuildProcess, failed: FailedBuild): Promise<Handed> {
    this.#o.log(`host build ${short(failed.digest)} did not take the node over: ${failed.reason}`);
    await (this.#state as LaunchState).failedBuild(failed);
    await old.send({ t: "not-upgraded", failed });
    return old;
  }

  /** The old host let go (or was asked to): it takes the node again. */
  async #resume(old: BuildProcess, failed: FailedBuild): Promise<Handed> {
    this.#o.log(
      `host build ${short(failed.digest)} did not take the node over: ${failed.reason}; the host before it resumes`,
    );
    await (this.#state as LaunchState).failedBuild(failed);
    if (old.exit !== undefined || !(await old.send({ t: "resume", failed })))
      return this.#start(old.build, false);
    return old;
  }

  /** Removes the host builds under the root but `keep`. */
  async #prune(keep: ReadonlyArray<string | undefined>): Promise<void> {
    const folder = join(this.#o.root, "host");
    for (const name of await readdir(folder).catch(() => [] as string[])) {
      if (!name.startsWith(".build@")) continue;
      if (keep.includes(name.slice(".build@".length))) continue;
      await rm(join(folder, name), { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/** Why a step of a handover failed, in words. */
function why(
  outcome: "exited" | "timeout" | "stopped",
  proc: BuildProcess,
  words: { readonly timeout: string; readonly exited: string },
): string {
  if (outcome === "stopped") return "the launcher was stopped during the handover";
  if (outcome === "exited" && proc.exit !== undefined)
    return `it ${exitWords(proc.exit)} ${words.exited}`;
  return words.timeout;
}

const codeOf = (host: BuildProcess): number =>
  host.exit?.code ?? (host.exit?.signal === null || host.exit === undefined ? 0 : 1);

const short = (digest: string | undefined): string =>
  digest === undefined ? "(the CLI's own)" : `${digest.slice(0, 12)}…`;

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
