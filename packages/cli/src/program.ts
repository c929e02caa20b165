/**
 * The verbs of `mesh` and how they are wired. Each verb lives in `commands/`, takes its parsed
 * options, and returns an exit code; errors are reported here, once, the way the verb was asked
 * to speak (`--json` or plain).
 */
import { Command, CommanderError, Option } from "commander";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { up } from "./commands/up.js";
import { registerToolVerbs } from "./commands/tool-verbs.js";
import { registerViewVerb } from "./commands/view.js";
import { registerControllerVerbs } from "./commands/controller-verbs.js";
import { registerDeliveryVerbs } from "./commands/delivery-verbs.js";
import { registerHostVerb } from "./commands/host.js";
import { registerOperateVerbs } from "./commands/operate-verbs.js";
import { ExitCode, reportError } from "./output.js";

export const DEFAULT_ROOT = "./.mesh";

export function buildProgram(): Command {
  const program = new Command("mesh")
    .description("Runs software on a fleet of machines over NATS.")
    .version(MESH_VERSION, "--version")
    .showHelpAfterError("(run `mesh help` for every verb)")
    .exitOverride();

  program
    .command("up")
    .description("Start a whole mesh on this machine in a root folder; Ctrl-C stops it cleanly.")
    .option("--root <dir>", "where the mesh keeps its bus, data and credentials", DEFAULT_ROOT)
    .option("--node <name>", "this machine's node name (default: from the hostname)")
    .addOption(
      new Option("--port <port>", "the bus's client port (default: 4222, or a free one)").argParser(
        parsePort,
      ),
    )
    .option("--json", "print where everything is as JSON")
    .option(
      "--demo",
      "also run the examples (hello, counter, board, broken) and wait until they are healthy",
    )
    .option("--no-runtime", "do not assign the tool runtime (node-tools) to every node")
    .option("--bus-only", "start only the bus, none of the mesh's processes")
    .addOption(
      new Option(
        "--view-port <port>",
        "the view's port on loopback (default: a free one)",
      ).argParser(parsePort),
    )
    .option("--exit-when-ready", "stop again as soon as everything is up (for scripts and CI)")
    .action(async (options: UpCliOptions) => {
      process.exitCode = await up(options);
    });
  registerToolVerbs(program);
  registerViewVerb(program);
  registerControllerVerbs(program);
  registerDeliveryVerbs(program);
  registerHostVerb(program);
  registerOperateVerbs(program);

  return program;
}

interface UpCliOptions {
  root: string;
  node?: string;
  port?: number;
  json?: boolean;
  demo?: boolean;
  runtime?: boolean;
  busOnly?: boolean;
  viewPort?: number;
  exitWhenReady?: boolean;
}

/** Runs the command line and returns the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  const json = argv.includes("--json");
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === "number" ? process.exitCode : ExitCode.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; commander has already printed what was wrong otherwise.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    return reportError(error, json);
  }
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--port ${JSON.stringify(value)} is not a port; give a whole number from 1 to 65535`,
    );
  }
  return port;
}

export const MESH_VERSION = "0.1.0";
