/**
 * What `mesh mcp` does: connects as the `mcp` principal (never the operator; with `--allow`, a
 * credential the broker narrowed to those modules), follows the tools
 * the mesh serves, and serves MCP over stdio (what an agent's configuration starts) or Streamable
 * HTTP until the agent hangs up or Ctrl-C. stdout belongs to the protocol; everything said goes
 * to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { MeshBus } from "@mesh/bus";
import { stopOnSignals } from "@mesh/kit";
import { allowedModules } from "@mesh/core";
import { ErrorCode, MeshError, Principal, checkName } from "@mesh/protocol";
import { credentialPath, rootPaths } from "../mesh-root.js";
import { rootOf } from "../find-mesh.js";
import { ExitCode } from "../output.js";
import { DEFAULT_MCP_CALL_TIMEOUT_MS, MCP_TOKEN_ENV, type McpCliOptions } from "./mcp-options.js";
import { createMcpServer } from "./mcp-server.js";
import { serveMcpHttp } from "./mcp-http.js";
import { ToolCatalogue } from "./tool-catalogue.js";
import { narrowedMcpCredential } from "./narrowed-credential.js";

const say = (line: string): void => void process.stderr.write(`mesh mcp: ${line}\n`);

export async function runMcp(options: McpCliOptions & { version: string }): Promise<ExitCode> {
  // Ctrl-C or SIGTERM ends the serving; a second one, or a stop past the grace, ends the process.
  using stopping = stopOnSignals({ name: "mesh mcp", log: say });
  const allow = allowOf(options);
  // With --allow, a credential the bus holds to those modules (unless one is named).
  const file =
    options.credential ??
    (allow === undefined
      ? credentialPath(rootPaths(rootOf(options)), Principal.mcp)
      : await narrowedMcpCredential({
          root: rootOf(options),
          modules: allow,
          signal: stopping.signal,
        }));
  await using bus = await MeshBus.connectWithFile(file, {
    name: "mesh-mcp",
    signal: stopping.signal,
  });
  if (bus.credential.module === Principal.operator) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${file} is the operator's credential; mesh mcp speaks only as the mcp principal, so an agent can call tools but never assign, configure or register — give the mcp credential (\`mesh up\` keeps it at <root>/credentials/mcp.json)`,
    );
  }
  await using catalogue = await ToolCatalogue.start({
    bus,
    ...modulesOf(options, allow),
    ...(options.node === undefined ? {} : { node: checkName("node", options.node) }),
    log: say,
  });
  const served = {
    bus,
    catalogue,
    callTimeoutMs: options.timeout ?? DEFAULT_MCP_CALL_TIMEOUT_MS,
    version: options.version,
  };
  say(`${catalogue.tools.length} tool(s) found, following the mesh for changes`);
  const ended = new Promise<void>((resolve) =>
    stopping.signal.addEventListener("abort", () => resolve(), { once: true }),
  );
  if (options.http === undefined) {
    const { server, dispose } = createMcpServer(served);
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
      process.stdin.once("end", () => resolve());
    });
    await server.connect(transport);
    await Promise.race([ended, closed, bus.closed()]);
    dispose();
    await server.close().catch(() => undefined);
    return ExitCode.ok;
  }
  const fromEnv = process.env[MCP_TOKEN_ENV];
  const token = options.token ?? (fromEnv === undefined || fromEnv === "" ? undefined : fromEnv);
  const http = await serveMcpHttp({
    ...served,
    port: options.http,
    ...(options.listen === undefined ? {} : { host: options.listen }),
    ...(token === undefined ? {} : { token }),
    log: say,
  });
  process.stdout.write(`mesh mcp: serving MCP at ${http.url}\n`);
  await Promise.race([ended, bus.closed()]);
  await http.close();
  return ExitCode.ok;
}

/** `--allow`'s modules, or undefined without it. */
function allowOf(options: McpCliOptions): string[] | undefined {
  if (options.allow === undefined) return undefined;
  return allowedModules(
    options.allow
      .split(",")
      .map((m) => m.trim())
      .filter((m) => m !== ""),
  );
}

/** `--allow` and `--module` together: the modules in both; neither: every module. */
function modulesOf(
  options: McpCliOptions,
  allow: readonly string[] | undefined,
): { modules?: readonly string[] } {
  const only = options.module === undefined ? undefined : checkName("module", options.module);
  if (allow === undefined) return only === undefined ? {} : { modules: [only] };
  if (only === undefined) return { modules: allow };
  if (!allow.includes(only)) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--module ${only} is not among --allow ${allow.join(",")}; name one of them, or widen --allow`,
    );
  }
  return { modules: [only] };
}
