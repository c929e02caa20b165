/** How the view's server answers: JSON, coded refusals, page files, events, and request bodies. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, MeshError } from "@mesh/protocol";
import type { CallResult } from "./browser/wire.js";

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The page may load only its own files and talk only to its own server; nothing from the
 * network, no inline script, no framing (clickjacking of the yes/no buttons).
 */
export const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-resource-policy": "same-origin",
};

/** A file the page is made of, as served. */
export interface PageFile {
  readonly body: Buffer;
  readonly type: string;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
  });
  res.end(JSON.stringify(body));
}

export function sendText(res: ServerResponse, text: string): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "content-type": "text/plain; charset=utf-8",
    "cache-control": "no-store",
  });
  res.end(text);
}

/** A refusal as every POST's result is shaped: `{ok: false, error: {code, message}}`. */
export function refuse(
  res: ServerResponse,
  status: number,
  code: ErrorCode,
  message: string,
): void {
  sendJson(res, status, { ok: false, error: { code, message } } satisfies CallResult);
}

export function sendFile(res: ServerResponse, file: PageFile | undefined): void {
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

/** One server-sent event. */
export function sendEvent(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** A request's JSON body, at most 1 MiB; INVALID_INPUT when it is larger or not JSON. */
export async function readBody(req: IncomingMessage): Promise<unknown> {
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
