/**
 * The view in headless Chromium against a real bus: the grid shows a healthy mesh, a change
 * written to the bus appears without a reload, an ask is answered with a click, a tool is called
 * from its form, a failed build's log opens. On failure the page is saved as a screenshot and its
 * path printed; with MESH_VIEW_SCREENSHOTS=<dir>, the healthy page is saved there too.
 *
 * Chromium must be installed (`/usr/bin/chromium`, or MESH_CHROMIUM): without it this test fails,
 * never skips, so a CI machine without a browser cannot pass for one with it.
 */
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Bucket, askKey, nodeKey, nodeModuleKey, toolSubject } from "@mesh/protocol";
import { KvBucket, sayCondition, type Served } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import {
  TestChromium,
  keepScreenshot,
  stepsOnTheView,
  type OnTheView,
} from "./browser-test-support.js";
import { ASK_ID, MODULES, NODES, serveGreet, viewSuite } from "./test-support.js";

const WAIT_MS = 10_000;

const GREET_INPUT = {
  type: "object",
  properties: {
    name: { type: "string", description: "who to greet" },
    times: { type: "integer", default: 1 },
    loud: { type: "boolean" },
    tone: { enum: ["warm", "dry"] },
    options: { type: "object", properties: { language: { type: "string" } } },
    tags: { type: "array", items: { type: "string" } },
  },
  required: ["name"],
};

describe("the view in Chromium", () => {
  let tool: Served | undefined;
  const chromium = new TestChromium(WAIT_MS, { after });
  const fx = viewSuite(
    { before, after },
    {
      setUp: async (mesh) => {
        tool = await serveGreet(mesh.admin, {
          description: "Says hello",
          input: GREET_INPUT,
          handler: (request) => {
            const { name, options, ...rest } = request.json() as {
              name: string;
              options?: { language?: string };
            };
            const greeting = options?.language === "fr" ? "Bonjour" : "Hello";
            return Promise.resolve({ greeting: `${greeting}, ${name}`, ...rest });
          },
        });
      },
      tearDown: async () => {
        await tool?.stop();
      },
    },
  );

  it("shows the mesh, follows it live, answers an ask, calls a tool and opens a build log", () =>
    stepsOnTheView(chromium, fx, [
      ["healthy grid", healthyGrid],
      ["a change without a reload", changeWithoutReload],
      ["narrow the grid", narrowTheGrid],
      ["answer an ask", answerAnAsk],
      ["call a tool from its form", callATool],
      ["open a failed build's log", openBuildLog],
      ["page through a larger fleet", pageThroughNodes],
    ]));
});

async function healthyGrid(t: OnTheView): Promise<void> {
  // Every wanted module on every node where it runs is shown healthy, in words too.
  const expected = MODULES.flatMap((m) => (m === "board" ? ["laptop"] : NODES).map((n) => [n, m]));
  for (const [node, module] of expected) {
    const cell = t.page.locator(`td.cell[data-node="${node}"][data-module="${module}"]`);
    assert.equal(await cell.getAttribute("data-health"), "healthy", `${module} on ${node}`);
    assert.match(await cell.innerText(), /healthy/);
  }
  assert.equal(await t.page.locator('td.cell[data-health="healthy"]').count(), expected.length);
  assert.match(await t.page.locator("#nodes").innerText(), /present/);
  assert.match(await t.page.locator("#conditions").innerText(), /set back/);
  await keepScreenshot(t.page, "grid-healthy");
  const shots = process.env["MESH_VIEW_SCREENSHOTS"];
  if (shots !== undefined) {
    await mkdir(shots, { recursive: true });
    await t.page.screenshot({ path: join(shots, "view-healthy.png"), fullPage: true });
  }
}

async function changeWithoutReload(t: OnTheView): Promise<void> {
  // Anything that survives is proof the page was not loaded again.
  await t.page.evaluate(() => ((globalThis as unknown as { stayed: boolean }).stayed = true));
  const have = await KvBucket.open(t.mesh.admin, Bucket.have);
  const build = (await have.get(nodeModuleKey("rack-2", "counter")))?.value.build;
  await have.put(nodeModuleKey("rack-2", "counter"), {
    ...(build === undefined ? {} : { build }),
    fingerprint: "f",
    health: "failing",
    since: new Date().toISOString(),
    restarts: 4,
    lastError: "exit code 1: counter could not open its state",
  });
  const cell = t.page.locator(
    'td.cell[data-node="rack-2"][data-module="counter"][data-health="failing"]',
  );
  await cell.waitFor();
  assert.match(await cell.innerText(), /failing/);
  assert.match(await cell.innerText(), /could not open its state/);
  await sayCondition(t.mesh.admin, {
    module: "counter",
    name: "crashed",
    level: "error",
    node: "rack-2",
    message: "counter exited 4 times",
  });
  await t.page.locator('[data-condition="counter.crashed"]').waitFor();
  // A resolved condition replaces the open one and leaves the page, as it leaves status.
  await sayCondition(t.mesh.admin, {
    module: "counter",
    name: "crashed",
    level: "info",
    node: "rack-2",
    message: "counter runs again",
    resolved: true,
  });
  await t.page.locator('[data-condition="counter.crashed"]').waitFor({ state: "detached" });
  assert.equal(
    await t.page.evaluate(() => (globalThis as unknown as { stayed?: boolean }).stayed),
    true,
  );
}

async function narrowTheGrid(t: OnTheView): Promise<void> {
  // Only what needs attention: the one failing cell, its row and its column.
  await t.page.locator("#grid-problems").check();
  await t.page.locator("td.cell").nth(1).waitFor({ state: "detached" });
  assert.equal(await t.page.locator('td.cell[data-health="failing"]').count(), 1);
  await t.page.locator("#grid-problems").uncheck();
  // A module's name shows its row on every node.
  await t.page.locator("#grid-filter").fill("hello");
  await t.page.locator('td.cell:not([data-module="hello"])').first().waitFor({ state: "detached" });
  assert.equal(await t.page.locator('td.cell[data-module="hello"]').count(), NODES.length);
  await t.page.locator("#grid-filter").fill("");
}

async function answerAnAsk(t: OnTheView): Promise<void> {
  const answers = await KvBucket.open(t.mesh.admin, Bucket.answers);
  const stop = new AbortController();
  const watch = answers.watch({ key: askKey(ASK_ID), include: "updates", signal: stop.signal });
  await watch.next(); // the current marker: the watch is in place before the click
  try {
    await t.page.locator(`[data-ask-id="${ASK_ID}"] button[data-answer="yes"]`).click();
    const written = await deadline(
      (async () => {
        for await (const event of watch) if (event.type === "put") return event.value;
        return undefined;
      })(),
      WAIT_MS,
      "mesh-answers to be written after the click",
    );
    assert.equal(written?.answer, "yes");
    assert.equal(written?.by, "ada");
  } finally {
    stop.abort();
  }
  // Answered, the ask stays (until the assigner withdraws it) with its answer, changeable.
  await t.page.locator(`[data-ask-id="${ASK_ID}"][data-answered="yes"]`).waitFor();
  assert.equal(await t.page.locator(`[data-ask-id="${ASK_ID}"] button`).count(), 1);
  const asks = await KvBucket.open(t.mesh.admin, Bucket.asks);
  await asks.delete(askKey(ASK_ID));
  await t.page.locator(`[data-ask-id="${ASK_ID}"]`).waitFor({ state: "detached" });
}

async function callATool(t: OnTheView): Promise<void> {
  const subject = toolSubject("laptop", "hello", "greet");
  await t.page.locator(`button[data-tool="${subject}"]`).click();
  const form = t.page.locator(`form#tool-call[data-subject="${subject}"]`);
  await form.getByLabel("name").fill("Ada");
  await form.getByLabel("times").fill("2");
  await form.getByLabel("options.language").fill("fr");
  await form.getByLabel("loud").check();
  await form.getByLabel("tone").selectOption({ label: "dry" });
  // An array is not modelled by the form: it gets a JSON field of its own.
  await form.getByLabel("tags").fill('["a", "b"]');
  await form.locator("button[type=submit]").click();
  const result = form.locator(".result-ok pre");
  await result.waitFor();
  assert.deepEqual(JSON.parse(await result.innerText()), {
    greeting: "Bonjour, Ada",
    times: 2,
    loud: true,
    tone: "dry",
    tags: ["a", "b"],
  });
}

async function openBuildLog(t: OnTheView): Promise<void> {
  await t.page.locator('tr[data-build="board.2-failed"] button').click();
  const log = t.page.locator("#build-log");
  await log.waitFor();
  assert.match(await log.innerText(), /Could not resolve/);
}

/**
 * 60 more nodes: the grid shows 50 at a time, the server hands it one page, the pager the next;
 * when they go, the grid is back on its one page.
 */
async function pageThroughNodes(t: OnTheView): Promise<void> {
  const presence = await KvBucket.open(t.mesh.admin, Bucket.presence);
  const at = new Date().toISOString();
  for (let i = 0; i < 60; i += 1) {
    const node = `edge-${String(i).padStart(2, "0")}`;
    await presence.put(nodeKey(node), {
      node,
      facts: { hostname: `${node}.local`, os: "linux", arch: "arm64", version: "0.1.0" },
      publicKey: "MCowBQYDK2VuAyEA0000000000000000000000000000000000000000000=",
      heartbeat: at,
    });
  }
  const pager = t.page.locator("#grid-pager");
  await t.page.locator("#grid-pager", { hasText: "nodes 1–50 of 62" }).waitFor();
  assert.equal(await t.page.locator('td.cell[data-module="hello"]').count(), 50);
  assert.equal(await t.page.locator('td.cell[data-node="rack-2"]').count(), 0);
  await pager.getByRole("button", { name: "next ›" }).click();
  await t.page.locator('td.cell[data-node="rack-2"][data-module="hello"]').waitFor();
  assert.match(await pager.innerText(), /nodes 51–62 of 62/);
  assert.equal(await t.page.locator('td.cell[data-module="hello"]').count(), 12);
  assert.match(await t.page.locator("#nodes h2").innerText(), /62/);
  // The fleet shrinks under the second page: the grid goes back to the page there is.
  for (let i = 0; i < 60; i += 1)
    await presence.delete(nodeKey(`edge-${String(i).padStart(2, "0")}`));
  await t.page.locator('td.cell[data-node="laptop"][data-module="hello"]').waitFor();
  await pager.waitFor({ state: "detached" });
  // The pager goes once 50 nodes or fewer are left, before the last deletes have arrived.
  await t.page.locator('td.cell[data-node^="edge-"]').first().waitFor({ state: "detached" });
  assert.equal(await t.page.locator('td.cell[data-module="hello"]').count(), 2);
}
