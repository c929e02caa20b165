/** What `mesh mcp` is asked for on its command line, shared by the verb and the server it runs. */

/** The environment variable that holds the bearer token of `--http`. */
export const MCP_TOKEN_ENV = "MESH_MCP_TOKEN";
/** Each call's deadline unless `--timeout` says otherwise. */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 30_000;

export interface McpCliOptions {
  readonly root?: string;
  readonly credential?: string;
  readonly module?: string;
  readonly node?: string;
  readonly allow?: string;
  readonly http?: number;
  readonly listen?: string;
  readonly token?: string;
  readonly timeout?: number;
}
