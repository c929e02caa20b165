/**
 * The view's server against a real bus, with the operator's real grant: the state it serves, the
 * changes it pushes, the answers and calls it makes, and the doors it keeps shut.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { createServer } from "node:net";
import { after, before, describe, it } from "node:test";
import {
  Bucket,
  ErrorCode,
  MeshError,
  askKey,
  isMeshError,
  kvStreamName,
  nodeModuleKey,
  toolSubject,
  type Have,
} from "@mesh/protocol";
import { KvBucket, request, sayCondition, serve, type Served } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import {
  CSRF_HEADER,
  CSRF_VALUE,
  Source,
  ViewEvent,
  type Change,
  type Snapshot,
} from "./browser/wire.js";
import { startView, type View } from "./start-view.js";
import {
  ASK_ID,
  FAILED_BUILD_LOG,
  seedMesh,
  startTestMesh,
  type TestMesh,
} from "./test-support.js";

const WAIT_MS = 5_000;
const TOKEN = "a-token-of-enough-length-0123456789";

/** Reads server-sent events off a response body as `{event, data}`. */
async function* sse(
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
async function next<T>(
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

/** A plain HTTP request, where the test chooses every header (Host included). */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: options.method ?? "GET", headers: options.headers },
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

const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  raw(url, {
    method: "POST",
    headers: { "content-type": "application/json", [CSRF_HEADER]: CSRF_VALUE, ...headers },
    body: JSON.stringify(body),
  });

const codeOf = (body: string): string | undefined =>
  (JSON.parse(body) as { error?: { code?: string } }).error?.code;

describe("the view's server", () => {
  let mesh: TestMesh;
  let view: View;
  let greet: Served;

  before(async () => {
    mesh = await startTestMesh();
    await seedMesh(mesh.admin);
    greet = await serve(mesh.admin, {
      name: "hello",
      version: "1.0.0",
      endpoints: [
        {
          name: "greet",
          subject: toolSubject("laptop", "hello", "greet"),
          metadata: {
            description: "Greets",
            input: JSON.stringify({ type: "object", properties: { name: { type: "string" } } }),
          },
          handler: (request) => {
            const { name } = request.json() as { name?: unknown };
            if (typeof name !== "string") {
              return Promise.reject(
                new MeshError(ErrorCode.INVALID_INPUT, "name must be a string"),
              );
            }
            return Promise.resolve({ greeting: `Hello, ${name}` });
          },
        },
      ],
    });
    view = await startView({ bus: mesh.operator, actor: "ada" });
  });
  after(async () => {
    await view?.close();
    await greet?.stop();
    await mesh?.stop();
  });

  it("serves the whole state once every source has handed what stands, builds without their logs", async () => {
    const response = await fetch(`${view.url}api/state`);
    assert.equal(response.status, 200);
    const state = (await response.json()) as Snapshot;
    assert.deepEqual(Object.keys(state.entries[Source.presence]).sort(), ["laptop", "rack-2"]);
    assert.equal(
      (state.entries[Source.have][nodeModuleKey("laptop", "hello")] as Have).health,
      "healthy",
    );
    assert.equal(Object.keys(state.entries[Source.wants]).length, 7);
    assert.ok(state.entries[Source.asks][ASK_ID] !== undefined);
    assert.ok(state.entries[Source.conditions]["assigner.set-back"] !== undefined);
    const failed = state.entries[Source.builds]["board.2-failed"] as Record<string, unknown>;
    assert.equal(failed["status"], "failed");
    assert.equal(failed["log"], undefined, "the log is fetched on demand, not sent with the state");
    assert.equal(failed["logLines"], 4);
    assert.deepEqual(state.problems, {});
  });

  it("serves a failed build's log, and NOT_FOUND for a build it does not know", async () => {
    const log = await fetch(`${view.url}api/build-log?key=board.2-failed`);
    assert.equal(log.status, 200);
    assert.equal(await log.text(), FAILED_BUILD_LOG);
    const missing = await fetch(`${view.url}api/build-log?key=board.9-nope`);
    assert.equal(missing.status, 404);
    assert.equal(codeOf(await missing.text()), ErrorCode.NOT_FOUND);
  });

  it("serves the page and its script, and nothing outside them", async () => {
    const page = await fetch(view.url);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'none'/);
    assert.match(await page.text(), /\/static\/browser\/main\.js/);
    assert.equal((await fetch(`${view.url}static/browser/main.js`)).status, 200);
    assert.equal((await fetch(`${view.url}static/../package.json`)).status, 404);
    assert.equal((await fetch(`${view.url}static/browser/main.d.ts`)).status, 404);
  });

  it("pushes the first state, then a have going failing and a new condition, to an open stream", async () => {
    const stop = new AbortController();
    const events = sse(`${view.url}api/events`, stop.signal);
    try {
      const snapshot = await next(
        events,
        (e) => (e.event === ViewEvent.snapshot ? (e.data as Snapshot) : undefined),
        "the first state",
      );
      assert.equal(Object.keys(snapshot.entries[Source.presence]).length, 2);

      const have = await KvBucket.open(mesh.admin, Bucket.have);
      await have.put(nodeModuleKey("rack-2", "counter"), {
        build: "1-aaaa",
        fingerprint: "f",
        health: "failing",
        since: new Date().toISOString(),
        restarts: 3,
        lastError: "exit code 1",
      });
      const change = await next(
        events,
        (e) => {
          const c = e.data as Change;
          return e.event === ViewEvent.change && c.source === Source.have ? c : undefined;
        },
        "the have's change",
      );
      assert.equal(change.key, "rack-2.counter");
      assert.equal((change.value as Have).health, "failing");

      await sayCondition(mesh.admin, {
        module: "counter",
        name: "crashed",
        level: "error",
        message: "exit code 1",
      });
      const condition = await next(
        events,
        (e) => {
          const c = e.data as Change;
          return e.event === ViewEvent.change && c.source === Source.conditions ? c : undefined;
        },
        "the condition's change",
      );
      assert.equal(condition.key, "counter.crashed");

      await have.delete(nodeModuleKey("rack-2", "counter"));
      const deleted = await next(
        events,
        (e) => {
          const c = e.data as Change;
          return e.event === ViewEvent.change && c.source === Source.have ? c : undefined;
        },
        "the have's deletion",
      );
      assert.equal(deleted.key, "rack-2.counter");
      assert.equal(deleted.value, undefined);
    } finally {
      stop.abort();
    }
  });

  it("watches each bucket once, however many pages are open", async () => {
    const stop = new AbortController();
    try {
      const pages = [1, 2, 3].map(() => sse(`${view.url}api/events`, stop.signal));
      for (const events of pages) {
        await next(
          events,
          (e) => (e.event === ViewEvent.snapshot ? true : undefined),
          "a first state",
        );
      }
      // The JetStream API itself, asked as the admin: the consumers on the have bucket's stream.
      const names = (await request(
        mesh.admin,
        `$JS.API.CONSUMER.NAMES.${kvStreamName(Bucket.have)}`,
        {},
      )) as {
        consumers: string[] | null;
      };
      assert.equal(names.consumers?.length, 1);
    } finally {
      stop.abort();
    }
  });

  it("answers an ask: POST /api/answer writes mesh-answers.<id> as the view's actor", async () => {
    const response = await postJson(`${view.url}api/answer`, { id: ASK_ID, answer: "yes" });
    assert.equal(response.status, 200, response.body);
    const answers = await KvBucket.open(mesh.admin, Bucket.answers);
    const written = await answers.get(askKey(ASK_ID));
    assert.equal(written?.value.answer, "yes");
    assert.equal(written?.value.by, "ada");
  });

  it("refuses an answer to an ask that does not exist, or that is neither yes nor no", async () => {
    const unknown = await postJson(`${view.url}api/answer`, { id: "a-nope", answer: "yes" });
    assert.equal(unknown.status, 404);
    assert.equal(codeOf(unknown.body), ErrorCode.NOT_FOUND);
    const maybe = await postJson(`${view.url}api/answer`, { id: ASK_ID, answer: "maybe" });
    assert.equal(maybe.status, 400);
    assert.equal(codeOf(maybe.body), ErrorCode.INVALID_INPUT);
    const notJson = await raw(`${view.url}api/answer`, {
      method: "POST",
      headers: { "content-type": "application/json", [CSRF_HEADER]: CSRF_VALUE },
      body: "{",
    });
    assert.equal(notJson.status, 400);
  });

  it("refuses a POST without the view's header, from another origin, or not JSON, and writes nothing", async () => {
    const answers = await KvBucket.open(mesh.admin, Bucket.answers);
    await answers.delete(askKey(ASK_ID));
    const body = JSON.stringify({ id: ASK_ID, answer: "no" });
    const attempts = [
      // What a cross-site form can send: no custom header.
      { "content-type": "application/json" },
      { "content-type": "text/plain", [CSRF_HEADER]: CSRF_VALUE },
      {
        "content-type": "application/json",
        [CSRF_HEADER]: CSRF_VALUE,
        origin: "http://evil.example",
      },
      { "content-type": "application/json", [CSRF_HEADER]: CSRF_VALUE, origin: "null" },
    ];
    for (const headers of attempts) {
      const response = await raw(`${view.url}api/answer`, { method: "POST", headers, body });
      assert.equal(response.status, 403, JSON.stringify(headers));
      assert.equal(codeOf(response.body), ErrorCode.REFUSED);
    }
    // The page's own origin is fine.
    const own = await postJson(
      `${view.url}api/answer`,
      { id: ASK_ID, answer: "no" },
      { origin: view.url.replace(/\/$/, "") },
    );
    assert.equal(own.status, 200, own.body);
    assert.equal((await answers.get(askKey(ASK_ID)))?.value.answer, "no");
  });

  it("refuses a request whose Host is not the view's own (DNS rebinding)", async () => {
    const response = await raw(`${view.url}api/state`, {
      headers: { host: `attacker.example:${view.port}` },
    });
    assert.equal(response.status, 421);
    const localhost = await raw(`${view.url}api/state`, {
      headers: { host: `localhost:${view.port}` },
    });
    assert.equal(localhost.status, 200);
  });

  it("calls a tool and hands back its result, or its coded refusal", async () => {
    const subject = toolSubject("laptop", "hello", "greet");
    const ok = await postJson(`${view.url}api/call`, { subject, input: { name: "Ada" } });
    assert.equal(ok.status, 200);
    const result = JSON.parse(ok.body) as { ok: boolean; result: unknown };
    assert.deepEqual(result.result, { greeting: "Hello, Ada" });
    const refused = await postJson(`${view.url}api/call`, { subject, input: { name: 3 } });
    assert.equal(codeOf(refused.body), ErrorCode.INVALID_INPUT);
    const nobody = await postJson(`${view.url}api/call`, {
      subject: toolSubject("rack-2", "hello", "greet"),
      input: {},
    });
    assert.equal(codeOf(nobody.body), ErrorCode.NOT_FOUND);
    const notATool = await postJson(`${view.url}api/call`, {
      subject: "$KV.mesh-answers.x",
      input: {},
    });
    assert.equal(notATool.status, 400);
  });

  it("lists the tools discovery finds, with their input schemas", async () => {
    const tools = (await (await fetch(`${view.url}api/tools`)).json()) as Array<{
      subject: string;
      input: unknown;
    }>;
    assert.deepEqual(
      tools.map((t) => t.subject),
      [toolSubject("laptop", "hello", "greet")],
    );
    assert.deepEqual(tools[0]?.input, { type: "object", properties: { name: { type: "string" } } });
  });
});

describe("the view's doors", () => {
  let mesh: TestMesh;

  before(async () => {
    mesh = await startTestMesh();
  });
  after(async () => {
    await mesh?.stop();
  });

  it("refuses to listen beyond loopback without both expose and a token", async () => {
    for (const options of [
      { host: "0.0.0.0" },
      { host: "0.0.0.0", expose: true },
      { host: "0.0.0.0", token: TOKEN },
      { host: "0.0.0.0", expose: true, token: "short" },
    ]) {
      await assert.rejects(
        startView({ bus: mesh.operator, ...options }),
        (error) => isMeshError(error, ErrorCode.VIEW_UNPROTECTED),
        JSON.stringify(options),
      );
    }
  });

  it("with expose and a token, refuses every request without the token", async () => {
    await using view = await startView({
      bus: mesh.operator,
      host: "0.0.0.0",
      expose: true,
      token: TOKEN,
    });
    // Reached by any name the network gives the machine: the token is the door, not the name.
    const base = `http://127.0.0.1:${view.port}/`;
    const host = { host: `mesh-1.example:${view.port}` };
    const without = await raw(`${base}api/state`, { headers: host });
    assert.equal(without.status, 401);
    assert.equal(codeOf(without.body), ErrorCode.PERMISSION_DENIED);
    const wrong = await raw(`${base}api/state`, {
      headers: { ...host, "x-mesh-view-token": `${TOKEN}x` },
    });
    assert.equal(wrong.status, 401);
    const withHeader = await raw(`${base}api/state`, {
      headers: { ...host, "x-mesh-view-token": TOKEN },
    });
    assert.equal(withHeader.status, 200);
  });

  it("takes the token once from the URL, moves it into a cookie, and accepts the cookie after", async () => {
    await using view = await startView({ bus: mesh.operator, token: TOKEN });
    assert.match(view.url, /\?token=/);
    assert.equal((await raw(view.url.replace(/\?.*$/, ""))).status, 401);
    const first = await raw(view.url);
    assert.equal(first.status, 303);
    assert.equal(first.headers["location"], "/");
    const cookie = String(first.headers["set-cookie"]).split(";")[0] ?? "";
    assert.match(String(first.headers["set-cookie"]), /HttpOnly/);
    assert.match(String(first.headers["set-cookie"]), /SameSite=Strict/);
    const page = await raw(view.url.replace(/\?.*$/, ""), { headers: { cookie } });
    assert.equal(page.status, 200);
    // The token does not replace the anti-CSRF proof: a POST still needs the header.
    const post = await raw(`${view.url.replace(/\?.*$/, "")}api/answer`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify({ id: ASK_ID, answer: "yes" }),
    });
    assert.equal(post.status, 403);
  });

  it("says LISTEN_FAILED when its port is taken", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen({ host: "127.0.0.1", port: 0 }, resolve));
    const address = taken.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    try {
      await assert.rejects(startView({ bus: mesh.operator, port }), (error) =>
        isMeshError(error, ErrorCode.LISTEN_FAILED),
      );
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it("ends every open event stream when it closes, and closing twice is harmless", async () => {
    const view = await startView({ bus: mesh.operator });
    const stop = new AbortController();
    const events = sse(`${view.url}api/events`, stop.signal);
    await next(
      events,
      (e) => (e.event === ViewEvent.snapshot ? true : undefined),
      "the first state",
    );
    const ended = events.next();
    await view.close();
    await view.close();
    const result = await deadline(ended, WAIT_MS, "the stream to end");
    assert.equal(result.done, true);
    stop.abort();
  });
});

describe("the view when the bus goes away", () => {
  it("tells open pages the bus is disconnected, and still closes", async () => {
    const mesh = await startTestMesh();
    const view = await startView({ bus: mesh.operator });
    const stop = new AbortController();
    try {
      const events = sse(`${view.url}api/events`, stop.signal);
      const first = await next(
        events,
        (e) => (e.event === ViewEvent.snapshot ? (e.data as Snapshot) : undefined),
        "the first state",
      );
      assert.equal(first.bus, "connected");
      await mesh.server.stop();
      const bus = await next(
        events,
        (e) => (e.event === ViewEvent.bus ? (e.data as { bus: string }).bus : undefined),
        "the bus event",
      );
      assert.equal(bus, "disconnected");
      await deadline(view.close(), WAIT_MS, "the view to close without its bus");
    } finally {
      stop.abort();
      await view.close();
      await mesh.stop();
    }
  });
});
