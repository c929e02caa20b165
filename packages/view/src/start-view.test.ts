/**
 * The view's server against a real bus, with the operator's real grant: the state it serves, the
 * changes it pushes, the answers and calls it makes. Its doors are in view-doors.test.ts.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  Bucket,
  ErrorCode,
  MeshError,
  askKey,
  kvStreamName,
  nodeModuleKey,
  toolSubject,
} from "@mesh/protocol";
import { KvBucket, request, sayCondition, type Served } from "@mesh/bus";
import {
  CSRF_HEADER,
  CSRF_VALUE,
  FLEET_SOURCES,
  Source,
  ViewEvent,
  type Change,
  type FleetSummary,
  type GridPage,
  type Snapshot,
} from "./browser/wire.js";
import { serveEchoOnRacks } from "@mesh/bus/testing";
import { codeOf, next, postJson, raw, sse } from "./http-test-support.js";
import { startView, type View } from "./start-view.js";
import {
  ASK_ID,
  FAILED_BUILD_LOG,
  seedMesh,
  serveGreet,
  startTestMesh,
  type TestMesh,
} from "./test-support.js";

const FLEET = new Set<string>(FLEET_SOURCES);

let mesh: TestMesh;
let view: View;
let greet: Served;

before(async () => {
  mesh = await startTestMesh();
  await seedMesh(mesh.admin);
  greet = await serveGreet(mesh.admin, {
    description: "Greets",
    input: { type: "object", properties: { name: { type: "string" } } },
    handler: (request) => {
      const { name } = request.json() as { name?: unknown };
      if (typeof name !== "string") {
        return Promise.reject(new MeshError(ErrorCode.INVALID_INPUT, "name must be a string"));
      }
      return Promise.resolve({ greeting: `Hello, ${name}` });
    },
  });
  view = await startView({ bus: mesh.operator, actor: "ada" });
});
after(async () => {
  await view?.close();
  await greet?.stop();
  await mesh?.stop();
});

describe("the view's server: what it serves", () => {
  it("serves the page sources whole and the fleet only as its summary, builds without their logs", async () => {
    const response = await fetch(`${view.url}api/state`);
    assert.equal(response.status, 200);
    const state = (await response.json()) as Snapshot;
    for (const source of FLEET_SOURCES) assert.equal(state.entries[source], undefined, source);
    assert.deepEqual(state.fleet.nodes, { total: 2, present: 2, gone: 0, never: 0 });
    assert.equal(state.fleet.modules, 4);
    // Every assigned cell runs healthy but board on rack-2: assigned everywhere, wanted on the
    // laptop only, so the read model says its want is still to come.
    assert.deepEqual(state.fleet.cells, { healthy: 7, starting: 1, notRunning: 0 });
    assert.equal(state.fleet.differences.total, 0);
    assert.ok(state.entries[Source.asks]?.[ASK_ID] !== undefined);
    assert.ok(state.entries[Source.conditions]?.["assigner.set-back"] !== undefined);
    const failed = state.entries[Source.builds]?.["board.2-failed"] as Record<string, unknown>;
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

  it("serves each route with its own method only: another method is refused, another path is NOT_FOUND", async () => {
    const wrongMethod = await postJson(`${view.url}api/state`, {});
    assert.equal(wrongMethod.status, 405);
    assert.equal(codeOf(wrongMethod.body), ErrorCode.REFUSED);
    const put = await raw(`${view.url}api/answer`, { method: "PUT" });
    assert.equal(put.status, 405);
    const unknownPost = await postJson(`${view.url}api/nothing`, {});
    assert.equal(unknownPost.status, 404);
    assert.equal(codeOf(unknownPost.body), ErrorCode.NOT_FOUND);
    const unknownGet = await raw(`${view.url}api/nothing`);
    assert.equal(unknownGet.status, 404);
    // HEAD is GET without a body.
    const head = await raw(`${view.url}api/build-log?key=board.2-failed`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.body, "");
    // The page's scripts are served from its sections folder too.
    assert.equal((await raw(`${view.url}static/browser/sections/grid.js`)).status, 200);
  });
});

describe("the view's server: the grid", () => {
  it("serves the grid a page of nodes at a time, narrowed by a name or to what needs attention", async () => {
    const grid = async (query: string): Promise<GridPage> => {
      const response = await fetch(`${view.url}api/grid?${query}`);
      assert.equal(response.status, 200);
      return (await response.json()) as GridPage;
    };
    const whole = await grid("");
    assert.deepEqual(
      whole.columns.map((c) => [c.node, c.state]),
      [
        ["laptop", "present"],
        ["rack-2", "present"],
      ],
    );
    assert.deepEqual(
      whole.rows.map((r) => r.module),
      ["board", "counter", "hello", "node-tools"],
    );
    assert.equal(whole.rows[0]?.placement, "on every node");
    assert.equal(Object.keys(whole.cells).length, 8);
    const hello = whole.cells[nodeModuleKey("laptop", "hello")];
    assert.equal(hello?.have?.health, "healthy");
    assert.equal(hello?.verdict?.state, "healthy");
    assert.equal(whole.cells[nodeModuleKey("rack-2", "board")]?.verdict?.state, "starting");
    const second = await grid("from=1&count=1");
    assert.deepEqual(
      second.columns.map((c) => c.node),
      ["rack-2"],
    );
    assert.deepEqual(second.matched, { nodes: 2, modules: 4 });
    assert.equal(Object.keys(second.cells).length, 4, "only the page's cells");
    assert.deepEqual(
      (await grid("filter=hello")).rows.map((r) => r.module),
      ["hello"],
    );
    assert.deepEqual(
      (await grid("filter=rack")).columns.map((c) => c.node),
      ["rack-2"],
    );
    const calm = await grid("attention=1");
    assert.deepEqual([calm.rows.length, calm.columns.length], [0, 0], "a healthy mesh");
  });
});

describe("the view's server: its event stream", () => {
  it("pushes the first state, then the fleet's summary when a have goes failing, and a new condition, to an open stream", async () => {
    const stop = new AbortController();
    const events = sse(`${view.url}api/events`, stop.signal);
    /** The next fleet summary; a fleet source's change, key by key, is never sent. */
    const fleet = (what: string, match: (s: FleetSummary) => boolean) =>
      next(
        events,
        (e) => {
          const c = e.data as Change;
          assert.ok(e.event !== ViewEvent.change || !FLEET.has(c.source), `a ${c.source} change`);
          return e.event === ViewEvent.fleet && match(e.data as FleetSummary)
            ? (e.data as FleetSummary)
            : undefined;
        },
        what,
      );
    try {
      const snapshot = await next(
        events,
        (e) => (e.event === ViewEvent.snapshot ? (e.data as Snapshot) : undefined),
        "the first state",
      );
      assert.equal(snapshot.fleet.nodes.total, 2);

      const have = await KvBucket.open(mesh.admin, Bucket.have);
      await have.put(nodeModuleKey("rack-2", "counter"), {
        build: "1-aaaa",
        fingerprint: "f",
        health: "failing",
        since: new Date().toISOString(),
        restarts: 3,
        lastError: "exit code 1",
      });
      const failing = await fleet(
        "a summary with the failing have",
        (s) => s.cells.notRunning === 1,
      );
      assert.ok(failing.version > snapshot.fleet.version);
      assert.deepEqual(failing.attention, { cells: 1, nodes: 0 });
      const page = (await (await fetch(`${view.url}api/grid?attention=1`)).json()) as GridPage;
      assert.ok(page.version >= failing.version);
      assert.deepEqual(Object.keys(page.cells), [nodeModuleKey("rack-2", "counter")]);
      const verdict = page.cells[nodeModuleKey("rack-2", "counter")]?.verdict;
      assert.match(verdict?.reason ?? "", /rack-2 reports build 1-aaaa failing: exit code 1/);
      assert.match(verdict?.fix ?? "", /mesh logs counter --node rack-2/);

      await sayCondition(mesh.admin, {
        module: "counter",
        name: "crashed",
        level: "error",
        message: "counter exited 3 times",
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

      // Reported no more: the read model gives the condition said about it as the reason.
      await have.delete(nodeModuleKey("rack-2", "counter"));
      for (;;) {
        await fleet("a summary after the have's deletion", () => true);
        const after = (await (
          await fetch(`${view.url}api/grid?filter=counter`)
        ).json()) as GridPage;
        const cell = after.cells[nodeModuleKey("rack-2", "counter")];
        if (cell?.have !== undefined) continue;
        assert.equal(cell?.verdict?.reason, "counter exited 3 times");
        break;
      }
    } finally {
      stop.abort();
    }
  });
});

describe("the view's server: one watch for every page", () => {
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
});

describe("the view's server: answers and the doors of a POST", () => {
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
});

describe("the view's server: tools", () => {
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

  it("lists a few nodes of each tool with how many serve it, and narrows to a node", async () => {
    // 25 nodes serve echo: the answer names 20 of them and says 25; its size follows the tools.
    const served = await serveEchoOnRacks(mesh.admin, 25);
    try {
      type Entry = { node: string; module: string; nodeCount: number };
      const all = (await (await fetch(`${view.url}api/tools`)).json()) as Entry[];
      const echo = all.filter((t) => t.module === "echo");
      assert.equal(echo.length, 20);
      assert.ok(echo.every((t) => t.nodeCount === 25));
      assert.equal(all.find((t) => t.module === "hello")?.nodeCount, 1);
      const one = (await (await fetch(`${view.url}api/tools?node=rack-24`)).json()) as Entry[];
      assert.deepEqual(
        one.map((t) => [t.node, t.module, t.nodeCount]),
        [["rack-24", "echo", 1]],
      );
    } finally {
      await Promise.all(served.map((s) => s.stop()));
    }
  });
});
