/**
 * `mesh mcp`: the mesh's tools for an AI agent, as a Model Context Protocol server (docs/mcp.md).
 * Registered here; the server itself (and the MCP SDK) is loaded only when the verb runs, so
 * every other verb starts without it.
 */
import { Option, type Command } from "commander";
import { ErrorCode, MESH_VERSION, MeshError } from "@mesh/protocol";
import {
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  MCP_TOKEN_ENV,
  type McpCliOptions,
} from "../../mcp/mcp-options.js";

export function registerMcpVerb(program: Command): void {
  program
    .command("mcp")
    .description(
      "Serve the mesh's tools to an AI agent over MCP (stdio, or Streamable HTTP with --http), as the mcp principal.",
    )
    .option("--root <dir>", "where `mesh up` keeps the mcp credential (default ./.mesh)")
    .option("--credential <file>", "the mcp credential to speak with (never the operator's)")
    .option("--module <name>", "only this module's tools")
    .option("--node <name>", "only the tools served on this node")
    .option("--allow <modules>", "only these modules' tools, comma-separated (e.g. hello,notes)")
    .addOption(
      new Option("--http <port>", "serve Streamable HTTP on this port (0: a free one)").argParser(
        (value) => parseWhole("--http", value, 0, 65_535),
      ),
    )
    .option("--listen <host>", "where --http listens (default 127.0.0.1); beyond needs a token")
    .option("--token <secret>", `the bearer token HTTP requests must carry (or ${MCP_TOKEN_ENV})`)
    .addOption(
      new Option(
        "--timeout <ms>",
        `each call's deadline (default ${DEFAULT_MCP_CALL_TIMEOUT_MS})`,
      ).argParser((value) => parseWhole("--timeout", value, 1, 3_600_000)),
    )
    .action(async (options: McpCliOptions) => {
      const { runMcp } = await import("../../mcp/run-mcp.js");
      process.exitCode = await runMcp({ ...options, version: MESH_VERSION });
    });
}

function parseWhole(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new MeshError(
      ErrorCode.USAGE,
      `${flag} ${JSON.stringify(value)} is not a whole number from ${min} to ${max}`,
    );
  }
  return n;
}
