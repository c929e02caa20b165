/**
 * `mesh host --node NAME --root DIR --credential FILE`: the node engine for this machine, until
 * SIGTERM or Ctrl-C. It stops gracefully and leaves the machine's processes running, so a host
 * that is restarted or upgraded adopts them instead of restarting them. The credential is the
 * host's own (the principal `host` on its node), never the operator's.
 */
import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { LaunchEnv, runHost, runLauncher, type HostOptions } from "@mesh/host";
import type { ExitCode } from "../../output.js";
import { CLI_MAIN } from "../../shipped.js";
import { shippedHostDigest } from "../../up/host-module.js";
import { MAX_TIMER_MS, positiveNumber } from "../../verb.js";

/**
 * How the machine is set up, as `mesh host`, `mesh join` and `mesh up` take it (`--account`,
 * `--adopted`, `--tools-idle`).
 */
export interface MachineOptions {
  /** The machine's operator account: the runtime runs as it (and under its home). */
  readonly account?: string;
  /** The machine is adopted: its own setup stays its administration's (filtered modules are left out). */
  readonly adopted?: boolean;
  /**
   * This node's idle time for tools modules (seconds; 0: never idle): a module not called for
   * this long has its worker stopped until its next call. A module's own `tools-idle` wins.
   */
  readonly toolsIdle?: number;
  /**
   * How often the host says it is present (ms). A rollout's gate holds at most one of these
   * after its `min-healthy` (decision 0130): a short `min-healthy` wants a short heartbeat.
   */
  readonly heartbeatMs?: number;
}

/** A user name as useradd takes it (and a trailing $ for machine accounts), as core checks it. */
const ACCOUNT_PATTERN = /^[a-z_][a-z0-9_-]{0,31}\$?$/i;

function parseAccount(value: string): string {
  if (!ACCOUNT_PATTERN.test(value)) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--account ${JSON.stringify(value)} is not a user name; give the machine's operator account as useradd takes it, e.g. --account ada`,
    );
  }
  return value;
}

/** Whole seconds, 0 included, up to a year: `--tools-idle`. */
function parseIdleSeconds(value: string): number {
  const seconds = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(seconds) || seconds > 366 * 24 * 3600) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--tools-idle ${JSON.stringify(value)} is not a whole number of seconds (0 to a year); give e.g. --tools-idle 300 (5 min), or 0 to keep every module's worker running`,
    );
  }
  return seconds;
}

/**
 * Adds `--account NAME`, `--adopted`, `--tools-idle S` and `--heartbeat-ms MS` to a verb that
 * runs (or starts) a host.
 */
export function machineOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--heartbeat-ms <ms>",
        "how often this node's host says it is present (default 15000); a rollout's gate waits at most one beat past its min-healthy",
      ).argParser(positiveNumber("--heartbeat-ms", "5000", MAX_TIMER_MS)),
    )
    .addOption(
      new Option(
        "--tools-idle <seconds>",
        "this node's idle time for tools modules: a module not called for this long has its worker stopped until its next call (default 600; 0: never; a module's own tools-idle wins)",
      ).argParser(parseIdleSeconds),
    )
    .addOption(
      new Option(
        "--account <name>",
        "the machine's operator account: the tool runtime runs as it (said in the node's presence)",
      ).argParser(parseAccount),
    )
    .option(
      "--adopted",
      "the machine is adopted: its own setup stays its administration's, so modules with a filter are left out here",
    );
}

/** The same options as arguments of `mesh host` (for `mesh up`, which starts the host). */
export function machineArgs(options: MachineOptions): string[] {
  return [
    ...(options.account === undefined ? [] : ["--account", options.account]),
    ...(options.adopted === true ? ["--adopted"] : []),
    ...(options.toolsIdle === undefined ? [] : ["--tools-idle", String(options.toolsIdle)]),
    ...(options.heartbeatMs === undefined ? [] : ["--heartbeat-ms", String(options.heartbeatMs)]),
  ];
}

export interface HostCliOptions extends MachineOptions {
  readonly node: string;
  readonly root: string;
  readonly credential: string;
  /** Stop the machine's processes when the host stops (mesh up: Ctrl-C leaves nothing running). */
  readonly stopProcessesOnExit?: boolean;
}

/** The host's options from the verb's. */
export function hostOptionsOf(options: HostCliOptions): HostOptions {
  return {
    node: options.node,
    root: options.root,
    credential: options.credential,
    ...(options.stopProcessesOnExit === true ? { stopProcessesOnStop: true } : {}),
    ...(options.account === undefined ? {} : { account: { name: options.account } }),
    ...(options.adopted === true ? { adopted: true } : {}),
    ...(options.toolsIdle === undefined ? {} : { runtimeIdleMs: options.toolsIdle * 1_000 }),
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
  };
}

/** The host's arguments as every host build takes them (the launcher passes them on). */
export function hostArgs(options: HostCliOptions): string[] {
  return [
    ...["--node", options.node, "--root", resolve(options.root)],
    ...["--credential", resolve(options.credential)],
    ...(options.stopProcessesOnExit === true ? ["--stop-processes-on-exit"] : []),
    ...machineArgs(options),
  ];
}

/**
 * Runs this machine's host: through the launcher (decision 0200), which runs the node's host build
 * — the CLI's own (this command again, told it is launched) or the one the mesh handed the node
 * to — and hands the node from one build to the next; the host itself when the launcher started
 * this process.
 */
export async function host(options: HostCliOptions): Promise<ExitCode> {
  if (process.env[LaunchEnv.launched] === "1")
    return (await runHost(hostOptionsOf(options))) as ExitCode;
  const digest = await shippedHostDigest();
  return (await runLauncher({
    root: resolve(options.root),
    args: hostArgs(options),
    // The CLI's own host is the mesh-host build it ships: a composition naming it hands nothing over.
    own: {
      argv: [process.execPath, CLI_MAIN, "host"],
      ...(digest === undefined ? {} : { digest }),
    },
  })) as ExitCode;
}

/**
 * Ends the process once a foreground host has stopped, should anything still hold it after a
 * grace: a host stopped while its bus watches were still starting leaves the NATS client's
 * heartbeat timer running (seen with `mesh join` and Ctrl-C right after start), and Ctrl-C must
 * end the verb. The timer is unref'd, so a process that ends by itself is not kept for it.
 */
export function leaveWhenDone(code: number, graceMs = 2_000): void {
  setTimeout(() => process.exit(code), graceMs).unref();
}

export function registerHostVerb(program: Command): void {
  machineOptions(program.command("host"))
    .description("Run this machine's host: make it match its node's composition, until Ctrl-C.")
    .requiredOption("--node <name>", "this machine's node name")
    .requiredOption("--root <dir>", "where the host keeps bundles, state, logs and the node key")
    .requiredOption("--credential <file>", "the host's own credential file (mode 0600)")
    .option(
      "--stop-processes-on-exit",
      "stop the machine's processes when the host stops (by default they keep running, for the next host to adopt)",
    )
    .action(async (options: HostCliOptions) => {
      process.exitCode = await host(options);
      leaveWhenDone(process.exitCode);
    });
}
