/**
 * The view: a web page on loopback that shows the mesh live and lets the operator answer asks
 * and call tools. One HTTP server (node:http: a dozen routes need no framework), one shared
 * `MeshState` fed by the bus, and Server-Sent Events to every open page.
 *
 * Routes:
 * - `GET /` the page; `GET /static/*` its stylesheet and compiled scripts (nothing from the network)
 * - `GET /api/state` the whole state (JSON), once every source has handed what stands
 * - `GET /api/events` SSE: `snapshot` first, then `change`, `problem` and `bus` events
 * - `GET /api/build-log?key=<module>.<build>` a build's log (text)
 * - `GET /api/tools` the tools discovery finds
 * - `POST /api/answer` `{id, answer}` writes `mesh-answers.<id>`
 * - `POST /api/call` `{subject, input}` calls a tool; the result or the coded error
 */
import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { readFile, readdir } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { extname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import {
  Answer,
  Bucket,
  ErrorCode,
  MeshError,
  askKey,
  isName,
  parseToolSubject,
} from "@mesh/protocol";
import { KvBucket, discoverTools, request, type MeshBus } from "@mesh/bus";
import {
  Source,
  ViewEvent,
  type AnswerRequest,
  type CallRequest,
  type CallResult,
  type ToolEntry,
} from "./browser/wire.js";
import {
  TOKEN_PARAM,
  crossSiteRefusal,
  tokenCookie,
  hostAllowed,
  isLoopback,
  requestToken,
  sameToken,
} from "./http-guard.js";
import { MeshState } from "./mesh-state.js";

export interface ViewOptions {
  /** The operator's connection: the view reads, answers and calls with its rights. */
  readonly bus: MeshBus;
  /** Where to listen; loopback unless `expose` is set. */
  readonly host?: string;
  /** 0 (default): any free port; the URL says which. */
  readonly port?: number;
  /**
   * A secret every request must carry. Required with `expose`; on loopback it is optional (other
   * users of the machine can reach loopback, so a shared machine wants one too).
   */
  readonly token?: string;
  /** Listen beyond loopback: the explicit yes that, with a token, allows a non-loopback host. */
  readonly expose?: boolean;
  /** Who answers asks, as written in `mesh-answers` (`by`). */
  readonly actor?: string;
  /** How long a tool call may take, in ms. */
  readonly callTimeoutMs?: number;
  /** Told about what went wrong behind a page (a source that cannot be read, a failed call). */
  readonly onProblem?: (what: string, error: unknown) => void;
  /** Stops the view, like close(). */
  readonly signal?: AbortSignal;
}

export interface View extends AsyncDisposable {
  /** The page's address; with a token, it carries it once (`?token=`). */
  readonly url: string;
  readonly port: number;
  /** The shared state, for tests and embedding. */
  readonly state: MeshState;
  /** Stops serving and closes every page's event stream. Closing twice is harmless. */
  close(): Promise<void>;
}

const MIN_TOKEN_LENGTH = 16;
const MAX_BODY_BYTES = 1024 * 1024;

/** Where the page's files are: `static/` beside `dist/`, and the compiled `dist/browser/`. */
const STATIC_DIR = fileURLToPath(new URL("../static/", import.meta.url));
const BROWSER_DIR = fileURLToPath(new URL("./browser/", import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
};

/**
 * The page may load only its own files and talk only to its own server; nothing from the
 * network, no inline script, no framing (clickjacking of the yes/no buttons).
 */
const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-resource-policy": "same-origin",
};

export async function startView(options: ViewOptions): Promise<View> {
  const host = options.host ?? "127.0.0.1";
  const token = options.token;
  if (!isLoopback(host) && (options.expose !== true || token === undefined)) {
    throw new MeshError(
      ErrorCode.VIEW_UNPROTECTED,
      `the view was asked to listen on ${JSON.stringify(host)}, beyond this machine, without ${options.expose === true ? "a token" : "the explicit option to expose it and a token"}; ` +
        `anyone reaching it could answer asks and call tools as the operator — keep loopback (and tunnel), or give both expose and a token`,
    );
  }
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH) {
    throw new MeshError(
      ErrorCode.VIEW_UNPROTECTED,
      `the view's token is ${token.length} characters long; give at least ${MIN_TOKEN_LENGTH} random characters`,
    );
  }

  const stopping = new AbortController();
  // One listener per watch, per page and per call: many more than the default warning's ten.
  setMaxListeners(1_000, stopping.signal);
  const onOuterAbort = (): void => void close();
  options.signal?.addEventListener("abort", onOuterAbort, { once: true });
  const state = MeshState.start({
    bus: options.bus,
    signal: stopping.signal,
    onProblem: (source, error) => options.onProblem?.(`reading ${source}`, error),
  });
  const files = await pageFiles();
  const streams = new Set<ServerResponse>();
  const answers = await KvBucket.open(options.bus, Bucket.answers);
  const actor = options.actor ?? "operator (view)";
  let allowedHosts = new Set<string>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://view.invalid");
    if (token === undefined && !hostAllowed(req, allowedHosts)) {
      return refuse(res, 421, ErrorCode.REFUSED, "this view serves only its own host names");
    }
    if (token !== undefined) {
      const given = requestToken(req, url, tokenCookie(port));
      if (!sameToken(given, token)) {
        return refuse(
          res,
          401,
          ErrorCode.PERMISSION_DENIED,
          "this view needs its token: open the URL it printed",
        );
      }
      if (url.searchParams.has(TOKEN_PARAM) && req.method === "GET" && url.pathname === "/") {
        // The token moves into a cookie and out of the address bar (and history, and referrers).
        url.searchParams.delete(TOKEN_PARAM);
        res.writeHead(303, {
          ...SECURITY_HEADERS,
          "set-cookie": `${tokenCookie(port)}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`,
          location: `${url.pathname}${url.search}`,
        });
        res.end();
        return;
      }
    }
    if (req.method === "POST") {
      const refusal = crossSiteRefusal(req);
      if (refusal !== undefined) return refuse(res, 403, ErrorCode.REFUSED, refusal);
      if (url.pathname === "/api/answer") return answer(req, res);
      if (url.pathname === "/api/call") return call(req, res);
      return refuse(res, 404, ErrorCode.NOT_FOUND, `no POST ${url.pathname}`);
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return refuse(res, 405, ErrorCode.REFUSED, `${req.method ?? "?"} is not served`);
    }
    switch (url.pathname) {
      case "/":
        return sendFile(res, files.get("/index.html"));
      case "/api/state":
        await state.ready;
        return sendJson(res, 200, state.snapshot());
      case "/api/events":
        return events(req, res);
      case "/api/build-log": {
        const key = url.searchParams.get("key") ?? "";
        const log = state.buildLog(key);
        if (log === undefined)
          return refuse(res, 404, ErrorCode.NOT_FOUND, `no build ${JSON.stringify(key)}`);
        res.writeHead(200, {
          ...SECURITY_HEADERS,
          "content-type": "text/plain; charset=utf-8",
          "cache-control": "no-store",
        });
        res.end(log);
        return;
      }
      case "/api/tools": {
        const tools = await discoverTools(options.bus, { signal: stopping.signal });
        return sendJson(
          res,
          200,
          tools.map(({ service: _service, ...tool }): ToolEntry => tool),
        );
      }
      default:
        return sendFile(res, files.get(url.pathname));
    }
  };

  const events = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    // Changes that arrive before the first state is sent are already in it.
    res.write(": the mesh's view\n\n");
    await state.ready;
    if (res.destroyed) return;
    send(res, ViewEvent.snapshot, state.snapshot());
    const unlisten = state.listen((event) => {
      switch (event.type) {
        case "change":
          return send(res, ViewEvent.change, event.change);
        case "problem":
          return send(res, ViewEvent.problem, event.problem);
        case "bus":
          return send(res, ViewEvent.bus, { bus: event.bus });
      }
    });
    streams.add(res);
    // A comment now and then keeps proxies and idle timers from closing a quiet stream.
    const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 25_000);
    const end = (): void => {
      clearInterval(keepAlive);
      unlisten();
      streams.delete(res);
    };
    req.on("close", end);
    res.on("close", end);
  };

  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = (await readBody(req)) as Partial<AnswerRequest> | undefined;
    const id = body?.id;
    if (
      typeof id !== "string" ||
      !isName("ask", id) ||
      (body?.answer !== "yes" && body?.answer !== "no")
    ) {
      return refuse(
        res,
        400,
        ErrorCode.INVALID_INPUT,
        'send {"id": "<ask id>", "answer": "yes" | "no"}',
      );
    }
    if (state.get(Source.asks, id) === undefined) {
      return refuse(
        res,
        404,
        ErrorCode.NOT_FOUND,
        `there is no open ask ${JSON.stringify(id)}; it may have been withdrawn`,
      );
    }
    const value = Answer.parse({ answer: body.answer, by: actor, at: new Date().toISOString() });
    await answers.put(askKey(id), value, { signal: stopping.signal });
    return sendJson(res, 200, { ok: true, result: value, ms: 0 } satisfies CallResult);
  };

  const call = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = (await readBody(req)) as Partial<CallRequest> | undefined;
    const subject = body?.subject;
    try {
      if (typeof subject !== "string") throw new Error("no subject");
      parseToolSubject(subject);
    } catch {
      return refuse(
        res,
        400,
        ErrorCode.INVALID_INPUT,
        'send {"subject": "mesh.tools.<node>.<module>.<tool>", "input": …}',
      );
    }
    const started = performance.now();
    try {
      const result = await request(options.bus, subject, body?.input ?? {}, {
        timeoutMs: options.callTimeoutMs ?? 10_000,
        signal: stopping.signal,
      });
      return sendJson(res, 200, {
        ok: true,
        result,
        ms: Math.round(performance.now() - started),
      } satisfies CallResult);
    } catch (error) {
      const meshError =
        error instanceof MeshError
          ? error
          : new MeshError(ErrorCode.INTERNAL, (error as Error).message);
      if (meshError.code === ErrorCode.INTERNAL) options.onProblem?.(`calling ${subject}`, error);
      // The call was made and answered with a refusal: that is the page's result, not an HTTP error.
      return sendJson(res, 200, {
        ok: false,
        error: { code: meshError.code, message: meshError.message },
      } satisfies CallResult);
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      options.onProblem?.(`serving ${req.method ?? "?"} ${req.url ?? "?"}`, error);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const code = error instanceof MeshError ? error.code : ErrorCode.INTERNAL;
      const message =
        error instanceof MeshError ? error.message : "the view failed; its detail is in its log";
      refuse(res, code === ErrorCode.INVALID_INPUT ? 400 : 500, code, message);
    });
  });

  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new MeshError(
          ErrorCode.LISTEN_FAILED,
          `the view could not listen on ${host}:${options.port ?? 0} (${error.code ?? error.message}); pick another port, or an address this machine has`,
          { cause: error },
        ),
      );
    });
    server.listen({ host, port: options.port ?? 0 }, () => {
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    });
  }).catch(async (error: unknown) => {
    options.signal?.removeEventListener("abort", onOuterAbort);
    await state.ready; // see close()
    stopping.abort();
    throw error;
  });
  const urlHost = host.includes(":") ? `[${host}]` : host;
  allowedHosts = new Set(
    [urlHost, ...(isLoopback(host) ? ["127.0.0.1", "localhost", "[::1]"] : [])].map(
      (h) => `${h.toLowerCase()}:${port}`,
    ),
  );

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= (async () => {
      options.signal?.removeEventListener("abort", onOuterAbort);
      for (const res of streams) res.end();
      const closed = new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      // Stop the watches only once each has started (or failed to): the NATS client finishes
      // starting a watch whose caller gave up, and one that finishes on a connection the caller
      // has closed meanwhile leaves a heartbeat timer behind that keeps the process alive.
      await state.ready;
      stopping.abort();
      await closed;
    })();
    return closing;
  }

  const base = `http://${urlHost}:${port}/`;
  return {
    url: token === undefined ? base : `${base}?${TOKEN_PARAM}=${encodeURIComponent(token)}`,
    port,
    state,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A random token for a view that listens beyond loopback. */
export const newViewToken = (): string => randomBytes(24).toString("base64url");

function send(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
  });
  res.end(JSON.stringify(body));
}

function refuse(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  sendJson(res, status, { ok: false, error: { code, message } } satisfies CallResult);
}

function sendFile(res: ServerResponse, file: { body: Buffer; type: string } | undefined): void {
  if (file === undefined) {
    refuse(res, 404, ErrorCode.NOT_FOUND, "no such page");
    return;
  }
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "content-type": file.type,
    "cache-control": "no-cache",
  });
  res.end(file.body);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `the request body is over ${MAX_BODY_BYTES} bytes`,
      );
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch (error) {
    throw new MeshError(ErrorCode.INVALID_INPUT, "the request body is not JSON", { cause: error });
  }
}

/**
 * The page's files, read once at start: a fixed set served by exact path, so no request can name
 * a file outside them. `/` is index.html; the rest under `/static/`.
 */
async function pageFiles(): Promise<Map<string, { body: Buffer; type: string }>> {
  const out = new Map<string, { body: Buffer; type: string }>();
  const add = async (dir: string, name: string, path: string): Promise<void> => {
    const type = CONTENT_TYPES[extname(name)];
    if (type === undefined) return;
    out.set(path, { body: await readFile(join(dir, name)), type });
  };
  for (const name of await readdir(STATIC_DIR))
    await add(STATIC_DIR, name, name === "index.html" ? "/index.html" : `/static/${name}`);
  // The page's scripts, sections/ included.
  for (const name of await readdir(BROWSER_DIR, { recursive: true }))
    await add(BROWSER_DIR, name, `/static/browser/${name.split(sep).join("/")}`);
  if (!out.has("/index.html") || !out.has("/static/browser/main.js")) {
    throw new MeshError(
      ErrorCode.INTERNAL,
      `the view's page is not built (${STATIC_DIR}index.html, ${BROWSER_DIR}main.js); run \`npm run build\``,
    );
  }
  return out;
}
