/**
 * The MCP server of `mesh mcp`, on the official SDK's low-level `Server` (the mesh's tools come
 * with JSON Schemas already, so no zod shapes are made up for them): `tools/list` from the
 * catalogue, `tools/call` through the bus with a deadline, `notifications/tools/list_changed`
 * whenever the catalogue changes. One `Server` per MCP session; they share one catalogue.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode as McpErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { request, type MeshBus } from "@mesh/bus";
import { CallHeader, ErrorCode, MeshError, isMeshError, toolSubject } from "@mesh/protocol";
import type { CatalogueTool, ToolCatalogue } from "./tool-catalogue.js";
import { listResources, readResource } from "./resources.js";

export interface MeshMcpOptions {
  readonly bus: MeshBus;
  readonly catalogue: ToolCatalogue;
  /** Each call's deadline, also sent to the runtime as `Mesh-Timeout-Ms`. */
  readonly callTimeoutMs: number;
  readonly version: string;
}

/** The property a non-object input is wrapped in: MCP wants every tool's input to be an object. */
export const WRAPPED_INPUT = "input";

/** A server for one session; `dispose()` stops it following the catalogue. */
export function createMcpServer(options: MeshMcpOptions): {
  server: Server;
  dispose: () => void;
} {
  const server = new Server(
    { name: "mesh", version: options.version },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true } },
      instructions:
        "The tools of a mesh: each is <module>__<tool>, served by that module on one or more nodes. " +
        "A refused call says its code (INVALID_INPUT, NOT_FOUND, REFUSED, TIMEOUT, INTERNAL) and what to do. " +
        "Resources mesh://modules/<module>/manifest and /tools describe each module.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: options.catalogue.tools.map(toMcpTool),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = options.catalogue.find(req.params.name);
    if (tool === undefined) {
      throw new McpError(
        McpErrorCode.InvalidParams,
        `no tool ${JSON.stringify(req.params.name)} is served; tools/list names every tool (<module>__<tool>)`,
      );
    }
    return callTool(options, tool, req.params.arguments ?? {}, extra.signal);
  });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: listResources(options.catalogue.tools),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
    try {
      const read = await readResource(options.bus, options.catalogue.tools, req.params.uri, {
        signal: extra.signal,
      });
      return { contents: [read] };
    } catch (error) {
      // MCP's code for a resource that is not there; the text carries the mesh's code and fix.
      const mesh = isMeshError(error) ? error : undefined;
      throw new McpError(
        mesh?.code === ErrorCode.NOT_FOUND ? -32002 : McpErrorCode.InternalError,
        mesh === undefined ? String(error) : `${mesh.code}: ${mesh.message}`,
        { uri: req.params.uri },
      );
    }
  });
  const stop = options.catalogue.onChange(() => {
    // Sent only once the client is initialized; a closed transport is the client's business.
    void server.sendToolListChanged().catch(() => undefined);
    void server.sendResourceListChanged().catch(() => undefined);
  });
  return { server, dispose: stop };
}

/** A catalogue entry as MCP lists it. */
export function toMcpTool(tool: CatalogueTool): Tool {
  const input = schemaOf(tool.input);
  const output = schemaOf(tool.output);
  return {
    name: tool.name,
    title: `${tool.module}/${tool.tool}`,
    description: tool.description === "" ? `${tool.module}/${tool.tool}` : tool.description,
    inputSchema: isObjectSchema(input)
      ? (input as Tool["inputSchema"])
      : {
          type: "object",
          properties: { [WRAPPED_INPUT]: input ?? {} },
          required: [WRAPPED_INPUT],
        },
    // MCP's structured output must be an object; any other result is returned as text only.
    ...(isObjectSchema(output) ? { outputSchema: output as Tool["outputSchema"] } : {}),
    _meta: { "mesh/nodes": tool.nodes, "mesh/version": tool.version },
  };
}

async function callTool(
  options: MeshMcpOptions,
  tool: CatalogueTool,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<CallToolResult> {
  const node = tool.nodes[0];
  if (node === undefined) return toolError(new MeshError(ErrorCode.NOT_FOUND, "no node serves it"));
  const body = isObjectSchema(schemaOf(tool.input)) ? args : args[WRAPPED_INPUT];
  try {
    const result = await request(options.bus, toolSubject(node, tool.module, tool.tool), body, {
      // The runtime's deadline a little inside ours, so its TIMEOUT arrives rather than our own.
      timeoutMs: options.callTimeoutMs + 1_000,
      headers: { [CallHeader.timeoutMs]: String(options.callTimeoutMs) },
      signal,
    });
    const structured =
      isObjectSchema(schemaOf(tool.output)) && isPlainObject(result)
        ? { structuredContent: result }
        : {};
    return { content: [{ type: "text", text: JSON.stringify(result) }], ...structured };
  } catch (error) {
    return toolError(error);
  }
}

/**
 * A refused or failed call as an MCP tool error: the text leads with the mesh's code, then the
 * message, which says what failed and what to do; `_meta` carries the code for programs.
 */
export function toolError(error: unknown): CallToolResult {
  const mesh = isMeshError(error)
    ? error
    : new MeshError(ErrorCode.INTERNAL, error instanceof Error ? error.message : String(error));
  return {
    isError: true,
    content: [{ type: "text", text: `${mesh.code}: ${mesh.message}` }],
    _meta: { "mesh/code": mesh.code },
  };
}

/** A JSON Schema as MCP wants it: an object, without `$schema` (MCP's default dialect is 2020-12). */
function schemaOf(schema: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(schema)) return undefined;
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function isObjectSchema(schema: Record<string, unknown> | undefined): boolean {
  return schema !== undefined && schema["type"] === "object";
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
