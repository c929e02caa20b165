/**
 * A module's tool calls plotted (decision 0172), in headless Chromium against a real bus and a
 * real runtime process (`node-tools`, its bus user holding exactly `runtimeGrant`): tools called
 * from the page's own form, answered and failing, appear in the module's plot of calls and errors
 * per second once the runtime has filed its window. The view is kept as a screenshot under
 * `test-results/view/`.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { Env, RUNTIME_MODULE, RuntimeStatusFile, toolSubject } from "@mesh/protocol";
import { writeCredential } from "@mesh/bus";
import { credentialFor, reapWithMe, stretched, waitFor } from "@mesh/bus/testing";
import { runtimeGrant } from "@mesh/core";
import { TestChromium, keepScreenshot, openView } from "./browser-test-support.js";
import { OPERATOR_NODE, viewSuite, type TestMesh } from "./test-support.js";

const WAIT_MS = stretched(10_000);
/** The runtime files every 5 s and the page reads every 5 s: a plot may lag both, and a load. */
const PLOT_WAIT_MS = stretched(30_000);
/** The runtime as the host runs it: its process's entry, from this package's dist/. */
const RUNTIME_MAIN = fileURLToPath(new URL("../../runtime/dist/main.js", import.meta.url));
const RUNTIME_USER = { user: "runtime", password: "runtime-password-for-tests" };
const COUNTER_TOOLS = `
import { defineModule, defineTool, z } from "${import.meta.resolve("@mesh/sdk")}";
export default defineModule({
  tools: [
    defineTool({ name: "inc", description: "Adds by to nothing.", input: z.object({ by: z.number() }),
      handler: async ({ by }) => ({ total: by }) }),
    defineTool({ name: "fail", description: "Always throws.", input: z.object({}),
      handler: async () => { throw new Error("the counter is broken"); } }),
  ],
});
`;

/** The runtime's grant when it runs counter's tools bundle alone. */
const RUNTIME_GRANT = runtimeGrant({
  node: OPERATOR_NODE,
  modules: [
    {
      module: "counter",
      states: [],
      reads: [],
      calls: [],
      bundles: [{ name: "tools", language: "typescript", entrypoints: ["t.ts"], loads: ["t.ts"] }],
    },
  ],
  owners: {},
});

describe("a module's tool calls plotted in Chromium", () => {
  let runtime: ChildProcess | undefined;
  let dir: string | undefined;
  const chromium = new TestChromium(WAIT_MS, { after });
  const fx = viewSuite(
    { before, after },
    {
      users: [{ ...RUNTIME_USER, permissions: RUNTIME_GRANT.permissions }],
      setUp: async (mesh) => {
        dir = await mkdtemp(join(tmpdir(), "mesh-view-tool-calls-"));
        runtime = await startRuntime(mesh, dir);
      },
      tearDown: async () => {
        if (runtime !== undefined && runtime.exitCode === null) {
          const exited = new Promise((resolve) => runtime?.once("exit", resolve));
          runtime.kill("SIGTERM");
          await exited;
        }
        if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      },
    },
  );

  it("plots the calls and the error of tools called from the page", async () => {
    const page = await chromium.newPage();
    await chromium.steps(page, [
      ["open", () => openView(page, fx.view.url)],
      ["call from the page", callFromThePage],
      ["the plot shows the calls and the error", plotShowsThem],
    ]);
  });
});

/** Starts `node-tools` serving counter, as the host would, and waits until it serves. */
async function startRuntime(mesh: TestMesh, dir: string): Promise<ChildProcess> {
  await mkdir(join(dir, "counter"), { recursive: true });
  const entry = join(dir, "counter", "tools.mjs");
  await writeFile(entry, COUNTER_TOOLS);
  const credential = join(dir, "runtime.json");
  await writeCredential(
    credential,
    credentialFor(mesh.server, RUNTIME_USER, { node: OPERATOR_NODE, module: RUNTIME_MODULE }),
  );
  const status = join(dir, "status.json");
  const child = spawn(process.execPath, [RUNTIME_MAIN], {
    env: {
      ...process.env,
      [Env.toolModules]: `counter=${entry}`,
      [Env.brokerFile]: credential,
      [Env.runtimeStatus]: status,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  reapWithMe(child.pid);
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  await waitFor(
    async () => {
      if (child.exitCode !== null) assert.fail(`node-tools exited ${child.exitCode}: ${stderr}`);
      const parsed = RuntimeStatusFile.safeParse(
        JSON.parse(await readFile(status, "utf8").catch(() => "null")),
      );
      return parsed.success && parsed.data.modules["counter"]?.state === "serving";
    },
    { what: "node-tools serving counter", timeout: 60_000 },
  );
  return child;
}

/** Three answered calls of inc and one failing call of fail, each through the tool's form. */
async function callFromThePage(page: Page): Promise<void> {
  await page.locator("#tools-refresh").click();
  const inc = toolSubject(OPERATOR_NODE, "counter", "inc");
  await page.locator(`button[data-tool="${inc}"]`).click();
  const form = page.locator(`form#tool-call[data-subject="${inc}"]`);
  for (const by of [1, 2, 3]) {
    await form.getByLabel("by").fill(String(by));
    await form.locator("button[type=submit]").click();
    await form.locator(".result-ok pre", { hasText: `"total": ${by}` }).waitFor();
  }
  const fail = toolSubject(OPERATOR_NODE, "counter", "fail");
  await page.locator(`button[data-tool="${fail}"]`).click();
  const failForm = page.locator(`form#tool-call[data-subject="${fail}"]`);
  await failForm.locator("button[type=submit]").click();
  await failForm.locator(".result-bad", { hasText: "INTERNAL" }).waitFor();
}

async function plotShowsThem(page: Page): Promise<void> {
  await page.locator(`td.cell[data-node="${OPERATOR_NODE}"][data-module="counter"]`).click();
  await page.locator('[data-open="tool-calls-all"]').click();
  const panel = page.locator('[data-tool-calls="every node.counter"]');
  await panel.waitFor();
  const inc = panel.locator('svg.tool-plot[data-tool="inc"]');
  const fail = panel.locator('svg.tool-plot[data-tool="fail"]');
  // The panel reads again every 5 s; the runtime files its window within 5 s of the calls.
  await panel
    .locator('svg.tool-plot[data-tool="fail"][data-errors="1"]')
    .waitFor({ timeout: PLOT_WAIT_MS });
  await panel.locator('svg.tool-plot[data-tool="inc"][data-calls="3"]').waitFor();
  assert.equal(await inc.getAttribute("data-errors"), "0");
  assert.equal(await fail.getAttribute("data-calls"), "1");
  assert.match(await fail.innerHTML(), /errors 1 \(INTERNAL 1\)/);
  // The error is drawn: one bar, in the step the call fell in; inc has none.
  assert.equal(await fail.locator("rect[data-errors-step]").count(), 1);
  assert.equal(await inc.locator("rect[data-errors-step]").count(), 0);
  // The calls line rose from zero somewhere: it is not flat.
  const d = (await inc.locator('path[data-line="calls"]').getAttribute("d")) ?? "";
  const levels = new Set([...d.matchAll(/(?:,|V)([\d.]+)/g)].map((m) => m[1]));
  assert.ok(levels.size >= 2, `the calls line moved: ${d}`);
  await keepScreenshot(page, "tool-calls");
}
