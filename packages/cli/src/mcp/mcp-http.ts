/**
 * `mesh mcp --http PORT`: the MCP server over Streamable HTTP at `/mcp`, one session (and one
 * SDK `Server`) per client. Like the view it listens on loopback, where the Host header must name
 * loopback (DNS rebinding protection); beyond loopback only with `--listen` and a token, which
 * every request must carry as `Authorization: Bearer <token>`.
 */
import { randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { createMcpServer, type MeshMcpOptions } from "./mcp-server.js";

export const MCP_PATH = "/mcp";
/** A token shorter than this is refused: it would be guessable. */
export const MIN_MCP_TOKEN_LENGTH = 16;
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface McpHttpOptions extends MeshMcpOptions {
  readonly port: number;
  /** Where to listen; loopback (127.0.0.1) by default. */
  readonly host?: string;
  readonly token?: string;
  readonly log?: (line: string) => void;
}

export interface McpHttp {
  readonly url: string;
  close(): Promise<void>;
}

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly dispose: () => void;
}

const isLoopback = (host: string): boolean =>
  host === "127.0.0.1" || host === "::1" || host === "localhost";

export async function serveMcpHttp(options: McpHttpOptions): Promise<McpHttp> {
  const host = options.host ?? "127.0.0.1";
  refuseUnprotected(host, options.token);
  const sessions = new McpSessions(options);
  const http = createServer((req, res) => {
    void sessions.handle(req, res).catch((error: unknown) => {
      options.log?.(`a request failed: ${(error as Error).message}`);
      if (!res.headersSent) jsonRpcError(res, 500, -32603, "internal error");
    });
  });
  const port = await listen(http, host, options.port);
  if (isLoopback(host))
    sessions.allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}${MCP_PATH}`,
    close: async () => {
      await sessions.closeAll();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Beyond loopback only with a token, and never with a short one. */
function refuseUnprotected(host: string, token: string | undefined): void {
  if (!isLoopback(host) && token === undefined) {
    throw new MeshError(
      ErrorCode.VIEW_UNPROTECTED,
      `mesh mcp was asked to listen on ${JSON.stringify(host)}, beyond this machine, without a token; anyone reaching it could call the mesh's tools — keep loopback, or give --token (or MESH_MCP_TOKEN)`,
    );
  }
  if (token !== undefined && token.length < MIN_MCP_TOKEN_LENGTH) {
    throw new MeshError(
      ErrorCode.VIEW_UNPROTECTED,
      `the token is ${token.length} characters long; give at least ${MIN_MCP_TOKEN_LENGTH} random characters`,
    );
  }
}

/** Listens on `host:port`; the port it got (`port` 0 picks one). LISTEN_FAILED when it cannot. */
async function listen(http: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    http.once("error", (error) =>
      reject(
        new MeshError(
          ErrorCode.LISTEN_FAILED,
          `mesh mcp cannot listen on ${host}:${port} (${error.message}); pick another --http port`,
          { cause: error },
        ),
      ),
    );
    http.listen(port, host, () => resolve());
  });
  const address = http.address();
  return typeof address === "object" && address !== null ? address.port : port;
}

/** The clients' sessions: a request with a session id goes to its session; initialize opens one. */
class McpSessions {
  readonly #sessions = new Map<string, Session>();
  /** On loopback, the Host headers a request may carry (set once the port is known). */
  allowedHosts: string[] | undefined;

  constructor(private readonly options: McpHttpOptions) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path !== MCP_PATH) {
      res.writeHead(404, { "content-type": "text/plain" }).end(`the MCP endpoint is ${MCP_PATH}\n`);
      return;
    }
    if (this.options.token !== undefined && !bearerMatches(req, this.options.token)) {
      res.writeHead(401, { "www-authenticate": "Bearer" });
      res.end("a bearer token is needed\n");
      return;
    }
    const sessionId = req.headers["mcp-session-id"];
    const body = req.method === "POST" ? await readJson(req, res) : undefined;
    if (body === null) return;
    if (typeof sessionId === "string") {
      const session = this.#sessions.get(sessionId);
      if (session === undefined) {
        jsonRpcError(res, 404, -32001, "no such session; initialize again");
        return;
      }
      await session.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      jsonRpcError(res, 400, -32000, "no session: send initialize first, without mcp-session-id");
      return;
    }
    await this.#open(req, res, body);
  }

  /** A new session (and SDK server) for an initialize request, kept under the id it is given. */
  async #open(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const made = createMcpServer(this.options);
    const allowedHosts = this.allowedHosts;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.#sessions.set(id, { transport, dispose: made.dispose });
      },
      ...(allowedHosts === undefined ? {} : { enableDnsRebindingProtection: true, allowedHosts }),
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined) this.#sessions.delete(id);
      made.dispose();
    };
    await made.server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  async closeAll(): Promise<void> {
    for (const session of this.#sessions.values()) {
      session.dispose();
      await session.transport.close().catch(() => undefined);
    }
    this.#sessions.clear();
  }
}

function bearerMatches(req: IncomingMessage, token: string): boolean {
  const header = req.headers.authorization ?? "";
  const given = Buffer.from(header.startsWith("Bearer ") ? header.slice(7) : "");
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

/** The body as JSON; null after answering 400/413 itself. */
async function readJson(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      jsonRpcError(res, 413, -32600, `the body is over ${MAX_BODY_BYTES} bytes`);
      return null;
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    jsonRpcError(res, 400, -32700, "the body is not JSON");
    return null;
  }
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}
