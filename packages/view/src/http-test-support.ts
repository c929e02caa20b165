/**
 * What the view's HTTP tests share: server-sent events read off a response, the next matching
 * event with a deadline, and requests where the test chooses every header.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { deadline } from "@mesh/bus/testing";
import { CSRF_HEADER, CSRF_VALUE } from "./browser/wire.js";

export const WAIT_MS = 5_000;

/** Reads server-sent events off a response body as `{event, data}`. */
export async function* sse(
  url: string,
  signal: AbortSignal,
): AsyncGenerator<{ event: string; data: unknown }> {
  const response = await fetch(url, { signal, headers: { accept: "text/event-stream" } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
  const reader = (response.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream())
    .getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (data !== "") yield { event, data: JSON.parse(data) as unknown };
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** The next event the stream hands that `match` accepts. */
export async function next<T>(
  events: AsyncGenerator<{ event: string; data: unknown }>,
  match: (event: { event: string; data: unknown }) => T | undefined,
  what: string,
): Promise<T> {
  return deadline(
    (async () => {
      for (;;) {
        const result = await events.next();
        if (result.done === true) throw new Error(`the event stream ended before ${what}`);
        const found = match(result.value);
        if (found !== undefined) return found;
      }
    })(),
    WAIT_MS,
    what,
  );
}

/**
 * A plain HTTP (or HTTPS, trusting `ca`) request, where the test chooses every header (Host
 * included).
 */
export function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; ca?: string } = {},
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith("https:") ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: options.method ?? "GET",
        ...(options.headers === undefined ? {} : { headers: options.headers }),
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

export const postJson = (
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  ca?: string,
) =>
  raw(url, {
    method: "POST",
    headers: { "content-type": "application/json", [CSRF_HEADER]: CSRF_VALUE, ...headers },
    body: JSON.stringify(body),
    ...(ca === undefined ? {} : { ca }),
  });

export const codeOf = (body: string): string | undefined =>
  (JSON.parse(body) as { error?: { code?: string } }).error?.code;
