/**
 * `mesh mcp` over stdio, driven by the official SDK client as an agent drives it: the process
 * started with `mesh mcp <args>`, connected within a deadline. Closing it closes the client and
 * then kills the process by its pid, in case closing the client left it running; a connect that
 * fails closes it too, so no test leaves a `mesh mcp` behind.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { deadline } from "@mesh/bus/testing";
import { MESH_MAIN } from "./run-mesh.js";

export interface McpStdioOptions {
  /** The client's name, as the server is told it. */
  readonly name: string;
  /** What to set on the client before it connects (a notification handler). */
  readonly prepare?: (client: Client) => void;
}

export interface McpStdio extends AsyncDisposable {
  readonly client: Client;
  close(): Promise<void>;
}

/** Starts `mesh mcp <args>` and connects a client to it (at most 60 s). */
export async function connectMcpStdio(
  args: readonly string[],
  options: McpStdioOptions,
): Promise<McpStdio> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MESH_MAIN, "mcp", ...args],
    stderr: "pipe",
  });
  const client = new Client({ name: options.name, version: "1.0.0" });
  options.prepare?.(client);
  const close = async (): Promise<void> => {
    const pid = transport.pid;
    await client.close().catch(() => undefined);
    try {
      if (pid !== null) process.kill(pid, "SIGKILL");
    } catch {
      // closing the client ended it
    }
  };
  try {
    await deadline(client.connect(transport), 60_000, "the MCP client to connect");
  } catch (error) {
    await close();
    throw error;
  }
  return { client, close, [Symbol.asyncDispose]: close };
}
