/**
 * The view's doors against a real bus: listening beyond loopback, the token and its cookie, and
 * the view when its port is taken, when it closes, and when its bus goes away.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, it } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { deadline } from "@mesh/bus/testing";
import { ViewEvent, type Snapshot } from "./browser/wire.js";
import { WAIT_MS, codeOf, next, raw, sse } from "./http-test-support.js";
import { startView } from "./start-view.js";
import { ASK_ID, startTestMesh, type TestMesh } from "./test-support.js";

const TOKEN = "a-token-of-enough-length-0123456789";

let mesh: TestMesh;

before(async () => {
  mesh = await startTestMesh();
});
after(async () => {
  await mesh?.stop();
});

describe("the view's doors", () => {
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
});

describe("the view's life: listening, closing", () => {
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
