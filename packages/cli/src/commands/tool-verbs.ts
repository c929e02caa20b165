/** Wires `mesh tools` and `mesh call` into the program (kept here so program.ts stays small). */
import { Option, type Command } from "commander";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { call, DEFAULT_CALL_TIMEOUT_MS, type CallOptions } from "./call.js";
import { tools, type ToolsOptions } from "./tools.js";

const ROOT_HELP = "where `mesh up` keeps the operator's credential (default ./.mesh)";
const CREDENTIAL_HELP = "a credential file to speak with (or set MESH_CREDENTIAL)";

export function registerToolVerbs(program: Command): void {
  program
    .command("tools")
    .description("List every tool served in the mesh, with its input schema ($SRV discovery).")
    .option("--node <name>", "only the tools served on this node")
    .option("--module <name>", "only this module's tools")
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", "print the tools as JSON")
    .action(async (options: ToolsOptions) => {
      process.exitCode = await tools(options);
    });

  program
    .command("call")
    .description("Call a tool and print its result, or its coded error.")
    .argument("<module/tool>", "the tool, e.g. hello/greet")
    .argument("[input]", "the input as JSON (default {})")
    .option("--node <name>", "the node to call it on (default: the one node that serves it)")
    .addOption(
      new Option(
        "--timeout <ms>",
        `the call's deadline in milliseconds (default ${DEFAULT_CALL_TIMEOUT_MS})`,
      ).argParser(parseTimeout),
    )
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", "print the result as JSON with ok, node, module and tool")
    .action(async (target: string, input: string | undefined, options: CallOptions) => {
      process.exitCode = await call(target, input, options);
    });
}

function parseTimeout(value: string): number {
  const ms = Number(value);
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--timeout ${JSON.stringify(value)} is not a number of milliseconds; give a whole number above 0, e.g. 5000`,
    );
  }
  return ms;
}
