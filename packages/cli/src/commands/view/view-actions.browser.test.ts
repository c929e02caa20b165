/**
 * Every action of the view's page in headless Chromium, as `mesh view` serves it (the CLI's own
 * verbs handed to the view), against a real bus and controller: each confirmed first, its
 * result shown, and its effect read back through the CLI (`mesh assignments`, `mesh config get`,
 * `mesh secret list`, `mesh module list` for a module registered from a path and one from a git
 * repository; puts and retries, which no verb lists, from their buckets). A secret's value never
 * reaches the page again. Screenshots under `test-results/view/`.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import type { Locator } from "playwright-core";
import { KvBucket } from "@mesh/bus";
import { credentialFor, stretched } from "@mesh/bus/testing";
import { resolveRolloutPolicy } from "@mesh/core";
import { Bucket, buildKey } from "@mesh/protocol";
import type { View } from "@mesh/view";
import { TestChromium, keepScreenshot, stepsOnTheView, type OnTheView } from "@mesh/view/testing";
import { serveAssignerTools, type AssignerTools } from "../../testing/assigner-tools.js";
import {
  startHelloMesh,
  operatorView,
  type ControllerMesh,
} from "../../testing/controller-mesh.js";
import { helloManifest } from "../../testing/fixtures.js";

const WAIT_MS = stretched(5_000);
const NOTES = fileURLToPath(new URL("../../../../../examples/modules/notes", import.meta.url));
const COUNTER = fileURLToPath(new URL("../../../../../examples/modules/counter", import.meta.url));
const SECRET = "s3cret-value-typed-once";
const execFileAsync = promisify(execFile);

describe("the view's actions in Chromium", () => {
  let mesh: ControllerMesh;
  let view: View;
  let tools: AssignerTools | undefined;
  const chromium = new TestChromium(WAIT_MS, { after });

  before(async () => {
    // Real keys: the controller seals the secret for each node that needs it.
    mesh = await startHelloMesh(
      ["n1", "n2"],
      helloManifest({
        config: { greeting: { type: "string", description: "what it says", default: "hi" } },
        "own-secrets": { "api-token": { path: "api-token" } },
      }),
    );
    const at = new Date().toISOString();
    await mesh.put(Bucket.builds, buildKey("hello", "1-a"), {
      module: "hello",
      build: "1-a",
      status: "built",
      candidate: 1,
      bundles: [],
      log: "",
      timings: { started: at, finished: at, ms: 1 },
    });
    view = await operatorView(mesh);
    // A put goes through the assigner's tool (decision 0190), which a runtime serves.
    tools = await serveAssignerTools({
      admin: mesh.admin,
      credential: credentialFor(mesh.server, mesh.server.admin, { node: "delivery", module: "x" }),
      node: "delivery",
    });
  });
  after(async () => {
    await tools?.stop();
    await view?.close();
    await mesh?.[Symbol.asyncDispose]();
  });

  it("does every action from the page, each confirmed, its effect on the mesh", () =>
    stepsOnTheView(chromium, { mesh, view }, [
      ["select a cell", selectCell],
      ["assign and unassign", assignments],
      ["put and unput", puts],
      ["retry", retries],
      ["config set and unset", config],
      ["secret set", secret],
      ["register a module", register],
      ["steer a rollout", steer],
      ["steer a config value's rollout", steerConfig],
    ]));
});

type Steps = OnTheView<ControllerMesh>;

/** hello's cell on n1 selected: its actions shown. */
async function selectCell(t: Steps): Promise<void> {
  await t.page.locator('td.cell[data-node="n1"][data-module="hello"]').click();
  await t.page.locator('[data-actions-for="n1.hello"]').waitFor();
}

/** A git repository of its own holding a copy of `folder`, one commit on branch main. */
async function gitRepoOf(folder: string): Promise<string> {
  const repo = await mkdtemp(join(tmpdir(), "mesh-view-git-"));
  await cp(folder, repo, { recursive: true });
  const git = (...args: string[]) =>
    execFileAsync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
  await git("init", "-q", "-b", "main");
  await git("add", ".");
  await git("commit", "-q", "-m", "counter");
  return repo;
}

/** Clicks an action, checks what the confirmation says, confirms, and waits for its result. */
async function doAction(t: Steps, action: string, says: RegExp, ok = true): Promise<string> {
  await t.page.locator(`[data-action="${action}"]`).click();
  const confirm = t.page.locator("#action-confirm .confirm");
  assert.match(await confirm.innerText(), says);
  await confirm.locator('[data-confirm="yes"]').click();
  const result = t.page.locator(
    ok ? '#action-result [data-result="ok"]' : "#action-result .result-bad",
  );
  await result.filter({ hasNotText: "doing…" }).waitFor();
  return result.innerText();
}

async function cli<T>(t: Steps, args: readonly string[]): Promise<T> {
  const run = await t.mesh.run([...args, "--json"]);
  assert.equal(run.code, 0, `${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout) as T;
}

const where = async (t: Steps): Promise<string[]> =>
  (
    await cli<{ assignments: Array<{ node: string }> }>(t, ["assignments", "--module", "hello"])
  ).assignments
    .map((a) => a.node)
    .sort();

async function assignments(t: Steps): Promise<void> {
  // Nothing happens before the confirmation; a cancel leaves the mesh as it was.
  await t.page.locator('[data-action="assign-node"]').click();
  await t.page.locator('[data-confirm="no"]').click();
  assert.deepEqual(await where(t), []);
  assert.match(
    await doAction(t, "assign-node", /mesh assign hello --node n1/),
    /assigned n1\.hello/,
  );
  assert.deepEqual(await where(t), ["n1"]);
  await t.page.locator("#action-nodes").fill("n1, n2");
  await doAction(
    t,
    "unassign-some",
    /mesh unassign hello --node n1 && mesh unassign hello --node n2/,
  );
  assert.deepEqual(await where(t), []);
  await doAction(t, "assign-some", /mesh assign hello --node n1 && mesh assign hello --node n2/);
  assert.deepEqual(await where(t), ["n1", "n2"]);
  await doAction(t, "assign-all", /mesh assign hello --all/);
  assert.deepEqual(await where(t), ["all", "n1", "n2"]);
  await doAction(t, "unassign-all", /mesh unassign hello --all/);
  await doAction(t, "unassign-node", /mesh unassign hello --node n1/);
  assert.deepEqual(await where(t), ["n2"]);
  await keepScreenshot(t.page, "actions-assign");
}

async function puts(t: Steps): Promise<void> {
  const bucket = await KvBucket.open(t.mesh.admin, Bucket.puts);
  assert.match(
    await doAction(t, "put-node", /mesh put hello 1-a --node n1/),
    /put hello on n1 to 1-a/,
  );
  assert.equal((await bucket.get("n1.hello"))?.value.build, "1-a");
  await doAction(t, "put-all", /mesh put hello 1-a$|mesh put hello 1-a\./);
  assert.equal((await bucket.get("all.hello"))?.value.build, "1-a");
  await doAction(t, "unput-all", /mesh unput hello\b/);
  assert.equal(await bucket.get("all.hello"), undefined);
  assert.match(
    await doAction(t, "unput-node", /mesh unput hello --node n1/),
    /lifted the put n1\.hello/,
  );
  assert.equal(await bucket.get("n1.hello"), undefined);
}

async function retries(t: Steps): Promise<void> {
  const bucket = await KvBucket.open(t.mesh.admin, Bucket.retries);
  assert.match(
    await doAction(t, "retry-node", /mesh retry hello --node n1/),
    /no build of it is marked failing/,
  );
  assert.equal((await bucket.get("n1.hello"))?.value.by, "hub.operator");
  await doAction(t, "retry-all", /mesh retry hello\b/);
  assert.ok((await bucket.get("all.hello")) !== undefined);
}

interface ConfigGet {
  keys: Array<{
    key: string;
    value?: { value: unknown };
    nodes: Record<string, { value: unknown }>;
  }>;
}

/**
 * Clicks a form's action, confirms it (checking what the confirmation says, when given) and
 * waits for the ok result that names `done`.
 */
async function formAction(
  t: Steps,
  form: Locator,
  action: string,
  done: string,
  says?: RegExp,
): Promise<void> {
  await form.locator(`[data-action="${action}"]`).click();
  const confirm = t.page.locator("#action-confirm .confirm");
  if (says !== undefined) assert.match(await confirm.innerText(), says);
  await confirm.locator('[data-confirm="yes"]').click();
  await t.page.locator('#action-result [data-result="ok"]', { hasText: done }).waitFor();
}

/** hello's greeting as `mesh config get hello` says it. */
const greeting = async (t: Steps) =>
  (await cli<ConfigGet>(t, ["config", "get", "hello"])).keys.find((k) => k.key === "greeting");

async function config(t: Steps): Promise<void> {
  const form = t.page.locator('[data-config-key="greeting"]');
  await form.locator('input[name="greeting"]').fill("bonjour");
  await formAction(
    t,
    form,
    "config-set",
    "set hello.greeting",
    /mesh config set hello greeting '"bonjour"'/,
  );
  assert.equal((await greeting(t))?.value?.value, "bonjour");
  // On one node, then unset there.
  await form.locator('[data-scope="greeting"]').selectOption("n1");
  await form.locator('input[name="greeting"]').fill("salut");
  await formAction(t, form, "config-set", "hello.greeting.n1");
  assert.equal((await greeting(t))?.nodes["n1"]?.value, "salut");
  await formAction(t, form, "config-unset", "unset hello.greeting.n1");
  assert.deepEqual((await greeting(t))?.nodes, {});
  await keepScreenshot(t.page, "actions-config");
}

async function secret(t: Steps): Promise<void> {
  await t.page.locator("#secret-name").fill("api-token");
  await t.page.locator("#secret-value").fill(SECRET);
  assert.match(
    await doAction(t, "secret-set", /mesh secret set hello api-token(?!.*s3cret)/),
    /secret api-token is set/,
  );
  // Typed once: the field is empty again, and the value is nowhere on the page.
  assert.equal(await t.page.locator("#secret-value").inputValue(), "");
  assert.equal((await t.page.content()).includes(SECRET), false);
  const listed = await cli<{ secrets: Array<{ name: string }> }>(t, ["secret", "list", "hello"]);
  assert.deepEqual(
    listed.secrets.map((s) => s.name),
    ["api-token"],
  );
}

async function register(t: Steps): Promise<void> {
  await t.page.locator("#register-spec").fill(NOTES);
  assert.match(
    await doAction(t, "register", /mesh module add .*examples\/modules\/notes/),
    /registered notes/,
  );
  const modules = await cli<{ modules: Array<{ module: string }> }>(t, ["module", "list"]);
  assert.ok(
    modules.modules.some((m) => m.module === "notes"),
    JSON.stringify(modules),
  );
  // From a git repository, as `mesh module add <url>#<ref>` registers it.
  const repo = await gitRepoOf(COUNTER);
  try {
    await t.page.locator("#register-spec").fill(`file://${repo}#main`);
    assert.match(
      await doAction(t, "register", new RegExp(`mesh module add file://${repo}#main`)),
      /registered counter/,
    );
    const listed = await cli<{ modules: Array<{ module: string; source?: { kind?: string } }> }>(
      t,
      ["module", "list"],
    );
    assert.equal(listed.modules.find((m) => m.module === "counter")?.source?.kind, "git");
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
  // A refusal is shown as the CLI says it: a path with no module there.
  await t.page.locator("#register-spec").fill("/nowhere/at/all");
  const refused = await doAction(t, "register", /mesh module add \/nowhere\/at\/all/, false);
  assert.match(refused, /nowhere/);
  await keepScreenshot(t.page, "actions-register");
}

/** A rollout of hello as the assigner records it: 1-b on its canary n1, wave 1 of 2. */
const rolloutOf = (status: "rolling" | "failed") => ({
  module: "hello",
  build: "1-b",
  from: ["1-a"],
  attempt: 1,
  status,
  wave: 1,
  waves: 2,
  admitted: ["n1"],
  waveNodes: ["n1"],
  waveAt: new Date().toISOString(),
  policy: resolveRolloutPolicy({ nodes: 2 }),
  waiting: "n1 healthy for 30s",
  ...(status === "failed"
    ? { failed: { reason: "n1 failed", nodes: [{ node: "n1", error: "exit code 1" }] } }
    : {}),
});

async function steer(t: Steps): Promise<void> {
  await t.mesh.put(Bucket.rollouts, "hello", rolloutOf("rolling"));
  const row = t.page.locator('#rollouts tr[data-rollout="hello"][data-status="rolling"]');
  await row.waitFor();
  assert.equal(await row.locator("[data-wave]").getAttribute("data-wave"), "1/2");
  assert.match(await row.innerText(), /canary: n1/);
  await row.locator('[data-steer="pause"]').click();
  const confirm = t.page.locator("#action-confirm .confirm");
  assert.match(await confirm.innerText(), /mesh rollout pause hello/);
  await confirm.locator('[data-confirm="yes"]').click();
  await t.page.locator('#action-result [data-result="ok"]', { hasText: "said pause" }).waitFor();
  const steers = await KvBucket.open(t.mesh.admin, Bucket.rolloutSteers);
  const paused = (await steers.get("hello"))?.value;
  assert.deepEqual([paused?.action, paused?.build, paused?.by], ["pause", "1-b", "hub.operator"]);
  // Halted: retry is what is offered, and it names the attempt it retries.
  await t.mesh.put(Bucket.rollouts, "hello", rolloutOf("failed"));
  const failed = t.page.locator('#rollouts tr[data-rollout="hello"][data-status="failed"]');
  await failed.waitFor();
  assert.match(await failed.innerText(), /n1: exit code 1/);
  await failed.locator('[data-steer="retry"]').click();
  await t.page.locator('[data-confirm="yes"]').click();
  await t.page.locator('#action-result [data-result="ok"]', { hasText: "said retry" }).waitFor();
  const retried = (await steers.get("hello"))?.value;
  assert.deepEqual([retried?.action, retried?.attempt], ["retry", 1]);
  await keepScreenshot(t.page, "rollouts");
}

/** A config value rolling out (decision 0131): its own table, its steer naming the key. */
async function steerConfig(t: Steps): Promise<void> {
  const at = new Date().toISOString();
  await t.mesh.put(Bucket.configRollouts, "hello.greeting", { value: "Hi", by: "ada", at });
  const { build: _build, from: _from, attempt: _attempt, ...record } = rolloutOf("rolling");
  await t.mesh.put(Bucket.configWaves, "hello.greeting", {
    ...record,
    key: "greeting",
    value: "Hi",
    fingerprint: "f".repeat(64),
    request: at,
    by: "ada",
  });
  const row = t.page.locator('#rollouts tr[data-config-rollout="hello.greeting"]');
  await row.waitFor();
  assert.match(await row.innerText(), /greeting="Hi"/);
  assert.equal(await row.locator("[data-wave]").getAttribute("data-wave"), "1/2");
  await row.locator('[data-steer="pause"]').click();
  const confirm = t.page.locator("#action-confirm .confirm");
  assert.match(await confirm.innerText(), /mesh rollout pause hello --config greeting/);
  await confirm.locator('[data-confirm="yes"]').click();
  await t.page.locator('#action-result [data-result="ok"]', { hasText: "said pause" }).waitFor();
  const requests = await KvBucket.open(t.mesh.admin, Bucket.configRollouts);
  assert.equal((await requests.get("hello.greeting"))?.value.steer?.action, "pause");
  await keepScreenshot(t.page, "config-rollouts");
}
