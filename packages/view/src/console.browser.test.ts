/**
 * The view as a console, in headless Chromium against a real bus: a module's logs stream as it
 * writes them (every node interleaved, then one node, older pages, search, the last error
 * marked), and a cell's history after two builds and a set-back (what ran, what was wanted and
 * why, the conditions opened and resolved, the module's timeline and its health over time), and
 * a rollout's progress over time drawn from the same timeline. Each view is kept as a screenshot
 * under `test-results/view/`.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Locator } from "playwright-core";
import { Bucket, logsSubject, nodeModuleKey, type LogLine } from "@mesh/protocol";
import { KvBucket, flush, publish, sayCondition } from "@mesh/bus";
import { stretched } from "@mesh/bus/testing";
import { cellConditionName } from "@mesh/core";
import {
  TestChromium,
  keepScreenshot,
  stepsOnTheView,
  type OnTheView,
} from "./browser-test-support.js";
import { digestOf, viewSuite } from "./test-support.js";

const WAIT_MS = stretched(4_000);

describe("the view as a console in Chromium", () => {
  const chromium = new TestChromium(WAIT_MS, { after });
  const fx = viewSuite({ before, after });

  it("streams a module's logs and shows a cell's history", () =>
    stepsOnTheView(chromium, fx, [
      ["logs on every node", logsOnEveryNode],
      ["logs stream as the module writes", logsStream],
      ["search and one node", searchAndOneNode],
      ["a cell's history after two builds and a set-back", cellHistory],
      ["a rollout's progress over time", rolloutProgress],
    ]));
});

/** One attribute of every element a locator finds, in order. */
const attributes = async (locator: Locator, name: string): Promise<Array<string | null>> =>
  Promise.all((await locator.all()).map((l) => l.getAttribute(name)));

/** Writes lines as a module's process does: on `mesh.logs.<node>.<module>`, into the stream. */
async function write(
  t: OnTheView,
  node: string,
  lines: ReadonlyArray<Partial<LogLine>>,
): Promise<void> {
  for (const line of lines) {
    publish(t.mesh.admin, logsSubject(node, "counter"), {
      process: "main",
      stream: "stdout",
      line: "",
      at: new Date().toISOString(),
      ...line,
    } satisfies LogLine);
  }
  await flush(t.mesh.admin);
}

async function selectCell(t: OnTheView, node: string, module: string): Promise<void> {
  await t.page.locator(`td.cell[data-node="${node}"][data-module="${module}"]`).click();
  await t.page.locator("#detail h2", { hasText: `${module} on ${node}` }).waitFor();
}

async function logsOnEveryNode(t: OnTheView): Promise<void> {
  // 150 lines on each node, written in turn: more than one page (200), fewer than two.
  for (let i = 0; i < 150; i += 1) {
    await write(t, "laptop", [{ line: `laptop tick ${i}` }]);
    await write(t, "rack-2", [{ line: `rack-2 tick ${i}` }]);
  }
  // Another module's lines are not the counter's.
  publish(t.mesh.admin, logsSubject("laptop", "hello"), {
    process: "main",
    stream: "stderr",
    line: "hello: error that is not the counter's",
    at: new Date().toISOString(),
  } satisfies LogLine);
  await flush(t.mesh.admin);
  await selectCell(t, "laptop", "counter");
  await t.page.locator('[data-open="logs-all"]').click();
  const count = t.page.locator("#log-count");
  await count.filter({ hasText: "200 lines" }).waitFor();
  const lines = t.page.locator("#log-lines .log-line");
  // The newest page, both nodes interleaved in the order they were written.
  assert.match(await lines.last().innerText(), /rack-2 tick 149/);
  assert.match(await lines.nth(198).innerText(), /laptop tick 149/);
  assert.equal(await t.page.locator('#log-lines [data-node="laptop"]').count(), 100);
  assert.equal(await t.page.locator("#log-last-error").count(), 0);
  await t.page.locator("#log-older").click();
  await count.filter({ hasText: "300 lines" }).waitFor();
  assert.match(await lines.first().innerText(), /laptop tick 0/);
  await t.page.locator("#log-older").waitFor({ state: "detached" });
  assert.equal(
    await t.page
      .locator("#logs")
      .innerText()
      .then((x) => x.includes("not the counter's")),
    false,
  );
}

async function logsStream(t: OnTheView): Promise<void> {
  await t.page.locator('[data-log-status="live"]').waitFor();
  await write(t, "rack-2", [
    { line: "counter: could not open its state", stream: "stderr" },
    { line: "counter: retrying" },
  ]);
  await t.page.locator("#log-count", { hasText: "302 lines" }).waitFor();
  const last = t.page.locator("#log-lines .log-last");
  assert.match(await last.innerText(), /could not open its state/);
  assert.match(
    await t.page.locator("#log-last-error").innerText(),
    /on rack-2: counter: could not open its state/,
  );
  assert.match(await t.page.locator("#log-lines .log-line").last().innerText(), /retrying/);
  // A later error takes the mark.
  await write(t, "laptop", [{ line: "Error: the disk is full" }]);
  await t.page.locator("#log-lines .log-last", { hasText: "the disk is full" }).waitFor();
  assert.equal(await t.page.locator("#log-lines .log-last").count(), 1);
  await keepScreenshot(t.page, "logs-every-node");
}

async function searchAndOneNode(t: OnTheView): Promise<void> {
  await t.page.locator("#log-search").fill("tick 14");
  // tick 14 and tick 140–149, on both nodes.
  await t.page.locator("#log-count", { hasText: "22 of 303 lines" }).waitFor();
  await keepScreenshot(t.page, "logs-search");
  await t.page.locator('[data-open="logs-node"]').click();
  await t.page.locator("#logs h2", { hasText: "on laptop" }).waitFor();
  await t.page.locator("#log-count", { hasText: "151 lines" }).waitFor();
  assert.equal(await t.page.locator('#log-lines [data-node="rack-2"]').count(), 0);
  await write(t, "rack-2", [{ line: "rack-2 only" }]);
  await write(t, "laptop", [{ line: "laptop again" }]);
  await t.page.locator("#log-lines .log-line", { hasText: "laptop again" }).waitFor();
  assert.equal(await t.page.locator("#log-lines .log-line", { hasText: "rack-2 only" }).count(), 0);
}

/**
 * Build 1 ran healthy, build 2 came and failed, the assigner set the cell back to build 1 and
 * said so in a condition: the history shows each of these, the timeline the three bands.
 */
async function cellHistory(t: OnTheView): Promise<void> {
  const have = await KvBucket.open(t.mesh.admin, Bucket.have);
  const wants = await KvBucket.open(t.mesh.admin, Bucket.wants);
  const key = nodeModuleKey("rack-2", "counter");
  const first = (await have.get(key))?.value.build ?? "";
  const second = `2-${digestOf("counter-2").slice(0, 8)}`;
  const want = (build: string, rule: "newest" | "set-back", reason: string) => ({
    build,
    manifestDigest: digestOf(`counter-manifest-${build}`),
    fingerprint: digestOf(`rack-2-${build}`).slice(0, 16),
    rule,
    reason,
  });
  const had = (build: string, health: "starting" | "healthy" | "failing", restarts: number) => ({
    build,
    fingerprint: digestOf(`rack-2-${build}`).slice(0, 16),
    health,
    since: new Date().toISOString(),
    restarts,
    ...(health === "failing" ? { lastError: "exit code 1: counter could not open its state" } : {}),
  });
  await wants.put(key, want(second, "newest", "the build of counter's newest candidate (2)"));
  await have.put(key, had(second, "starting", 0));
  await have.put(key, had(second, "failing", 3));
  await wants.put(
    key,
    want(first, "set-back", `build ${second} failed on rack-2; set back to ${first}`),
  );
  await sayCondition(t.mesh.admin, {
    module: "assigner",
    name: cellConditionName("set-back", "rack-2", "counter"),
    level: "warning",
    node: "rack-2",
    message: `counter was set back to ${first} on rack-2: build ${second} failed there`,
  });
  await have.put(key, had(first, "healthy", 0));

  await selectCell(t, "rack-2", "counter");
  await t.page.locator('[data-open="history"]').click();
  const history = t.page.locator('[data-history="rack-2.counter"]');
  await history.waitFor();
  const builds = await attributes(history.locator("tr[data-have-revision]"), "data-build");
  assert.deepEqual(builds, [first, second, second, first]);
  assert.match(
    await history.locator("tr[data-have-revision]").nth(2).innerText(),
    /failing[\s\S]*3[\s\S]*could not open its state/,
  );
  const rules = await attributes(history.locator("tr[data-want-rule]"), "data-want-rule");
  assert.deepEqual(rules, ["newest", "newest", "set-back"]);
  assert.match(
    await history.locator('tr[data-want-rule="set-back"]').innerText(),
    /failed on rack-2/,
  );
  const condition = history.locator(
    `tr[data-history-condition="assigner.${cellConditionName("set-back", "rack-2", "counter")}"]`,
  );
  assert.match(await condition.innerText(), /open[\s\S]*set back to/);
  // Resolved (build 1 runs healthy again, as the assigner says it): the history's refresh shows so.
  await sayCondition(t.mesh.admin, {
    module: "assigner",
    name: cellConditionName("set-back", "rack-2", "counter"),
    level: "info",
    node: "rack-2",
    message: `counter runs ${first} healthy on rack-2 again`,
    resolved: true,
  });
  await t.page.locator("#history button", { hasText: "refresh" }).click();
  const resolved = history.locator(
    `tr[data-history-condition="assigner.${cellConditionName("set-back", "rack-2", "counter")}"][data-resolved="true"]`,
  );
  await resolved.waitFor();
  assert.match(await resolved.innerText(), /resolved[\s\S]*healthy on rack-2 again/);
  // The timeline: rack-2 took build 1, then 2, then 1 again; the laptop only build 1.
  const bands = await attributes(
    t.page.locator('#timeline rect[data-node="rack-2"]'),
    "data-build",
  );
  assert.deepEqual(bands, [first, second, first]);
  assert.equal(await t.page.locator('#timeline rect[data-node="laptop"]').count(), 1);
  // The module's health over time: both nodes healthy now; one was failing, then was not.
  const plot = t.page.locator("#health-plot");
  assert.match(await plot.innerHTML(), /■ healthy 2/);
  const failing = (await plot.locator('path[data-health="failing"]').getAttribute("d")) ?? "";
  const levels = [...failing.matchAll(/V([\d.]+)/g)].map((m) => Number(m[1]));
  assert.ok(new Set(levels).size >= 2, `the failing line moved: ${failing}`);
  await keepScreenshot(t.page, "history-set-back");
}

/**
 * The build that rack-2 took and was set back from is rolled out: the plot of its nodes over time
 * rose to one and fell back to none, against the two nodes admitted.
 */
async function rolloutProgress(t: OnTheView): Promise<void> {
  const second = `2-${digestOf("counter-2").slice(0, 8)}`;
  const first = (await (await KvBucket.open(t.mesh.admin, Bucket.have)).get("laptop.counter"))
    ?.value.build;
  const rollouts = await KvBucket.open(t.mesh.admin, Bucket.rollouts);
  await rollouts.put("counter", {
    module: "counter",
    build: second,
    from: [first ?? ""],
    attempt: 1,
    status: "failed",
    wave: 1,
    waves: 2,
    admitted: ["laptop", "rack-2"],
    waveNodes: ["rack-2"],
    waveAt: new Date().toISOString(),
    policy: {
      canary: 1,
      batch: 1,
      minHealthyMs: 10_000,
      healthyDeadlineMs: 60_000,
      maxFailing: 0,
      pauseAfterCanary: false,
      order: "name",
      source: "default",
    },
    waiting: "nothing: the canary failed",
    failed: { reason: "the canary failed", nodes: [{ node: "rack-2", error: "exit code 1" }] },
  });
  await t.page.locator('[data-rollout-progress="counter"]').click();
  const plot = t.page.locator('svg[data-rollout-plot="counter"]');
  await plot.waitFor();
  assert.equal(await plot.getAttribute("data-on"), "0");
  const d = (await plot.locator('path[data-line="on"]').getAttribute("d")) ?? "";
  const levels = [...d.matchAll(/V([\d.]+)/g)].map((m) => Number(m[1]));
  // Up when rack-2 took the build, down when it was set back: two levels, the last the first's.
  assert.equal(new Set(levels).size, 2, d);
  assert.equal(levels.at(-1), levels[0], d);
  assert.match(await plot.innerHTML(), /admitted 2/);
  await keepScreenshot(t.page, "rollout-progress");
}
