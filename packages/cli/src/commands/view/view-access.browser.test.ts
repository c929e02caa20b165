/**
 * `mesh view --listen` as an operator runs it (the CLI as a child process, a real bus and
 * controller), in headless Chromium: a page without a login is refused; the link `mesh view`
 * prints logs in once; an action is done as the view's own principal (`view`, issued by the
 * controller with the operator's grant) and recorded as a condition saying who; a read-only
 * session (`mesh view-token --read-only`) has its action refused by the bus, not by the page;
 * an action from another origin is refused even with the session's cookie and token; and the
 * page's log out ends the session on the server, so its old cookie is refused after.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { deadline, reapWithMe, stretched } from "@mesh/bus/testing";
import { Env } from "@mesh/protocol";
import { TestChromium, keepScreenshot, openView } from "@mesh/view/testing";
import { startHelloMesh, type ControllerMesh } from "../../testing/controller-mesh.js";

const MAIN = fileURLToPath(new URL("../../main.js", import.meta.url));
const WAIT_MS = stretched(5_000);

type Child = ChildProcessByStdio<null, Readable, Readable>;

describe("mesh view --listen in Chromium", () => {
  let mesh: ControllerMesh;
  let root: string;
  let child: Child | undefined;
  const chromium = new TestChromium(WAIT_MS, { after });
  const { step } = chromium;

  before(async () => {
    mesh = await startHelloMesh(["n1"]);
    // A root of its own: the view keeps its login key and certificate there.
    root = await mkdtemp(join(tmpdir(), "mesh-cli-view-listen-"));
    await mkdir(join(root, "credentials"), { recursive: true });
    await copyFile(mesh.credential, join(root, "credentials", "operator.json"));
  });
  after(async () => {
    child?.kill("SIGINT");
    await mesh?.[Symbol.asyncDispose]();
    await rm(root, { recursive: true, force: true });
  });

  it("asks for a login, acts as its own principals, refuses a read-only session's action and another origin's, and logs out", async () => {
    const { page: url, url: link } = await startListening();
    const page = await chromium.newPage();
    const t: Steps = { mesh, root, url };
    await step("a page without a login", () => withoutLogin(page, url));
    await step("the printed link logs in and acts as view", () => operate(page, t, link));
    await step("another origin", () => otherOrigin(page, t));
    await step("log out", () => logOut(page, t));
    const reader = await chromium.newPage();
    await step("a read-only session", () => readOnly(reader, t));
    assert.deepEqual(chromium.pageErrors, []);
  });

  /** Starts `mesh view --listen 127.0.0.1` and reads the URL and login link it prints. */
  async function startListening(): Promise<{ page: string; url: string }> {
    child = spawn(
      process.execPath,
      [MAIN, "view", "--root", root, "--listen", "127.0.0.1", "--json"],
      { env: { ...process.env, [Env.credential]: "" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    reapWithMe(child.pid, { signal: "SIGINT" });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const line = await deadline(
      new Promise<string>((resolve, reject) => {
        let text = "";
        child?.stdout.on("data", (chunk: Buffer) => {
          text += chunk.toString();
          // One JSON document, printed across lines: complete once it parses.
          try {
            JSON.parse(text);
            resolve(text);
          } catch {
            // more to come
          }
        });
        child?.once("exit", (code) =>
          reject(new Error(`mesh view exited ${String(code)}: ${stderr}`)),
        );
      }),
      WAIT_MS * 4,
      "mesh view --listen to print its link",
    );
    return JSON.parse(line) as { page: string; url: string };
  }
});

interface Steps {
  readonly mesh: ControllerMesh;
  readonly root: string;
  /** The page's address (https://127.0.0.1:<port>/). */
  readonly url: string;
}

async function cli<T>(t: Steps, args: readonly string[]): Promise<T> {
  const run = await t.mesh.run([...args, "--json"]);
  assert.equal(run.code, 0, `${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout) as T;
}

const assigned = async (t: Steps): Promise<Array<{ node: string; by: string }>> =>
  (
    await cli<{ assignments: Array<{ node: string; by: string }> }>(t, [
      "assignments",
      "--module",
      "hello",
    ])
  ).assignments;

interface Conditions {
  conditions: Array<{ module: string; level: string; message: string }>;
}
const records = async (t: Steps): Promise<string[]> =>
  (await cli<Conditions>(t, ["conditions"])).conditions
    .filter((c) => c.module === "view")
    .map((c) => c.message);

async function withoutLogin(page: Page, url: string): Promise<void> {
  assert.match(url, /^https:\/\/127\.0\.0\.1:\d+\/$/);
  const response = await page.goto(url);
  assert.equal(response?.status(), 401);
  assert.match(await page.locator("body").innerText(), /needs a login/);
  assert.equal(await page.locator("#grid").count(), 0);
  await keepScreenshot(page, "access-no-login");
}

async function assignFromPage(page: Page): Promise<void> {
  await page.locator('td.cell[data-node="n1"][data-module="hello"]').click();
  await page.locator('[data-action="assign-node"]').click();
  await page.locator('[data-confirm="yes"]').click();
}

async function operate(page: Page, t: Steps, link: string): Promise<void> {
  assert.match(link, /\/login\?token=[\w-]+\.[\w-]+$/);
  await openView(page, link);
  assert.equal(new URL(page.url()).pathname, "/");
  assert.equal(new URL(page.url()).search, "", "the token left the address bar");
  await page.locator('#who[data-access="operate"]').waitFor();
  await assignFromPage(page);
  await page
    .locator('#action-result [data-result="ok"]', { hasText: "assigned n1.hello" })
    .waitFor();
  // Done as the view's own principal, which the controller issued: the bus says who wrote it.
  assert.deepEqual(
    (await assigned(t)).map((a) => [a.node, a.by]),
    [["n1", "hub.view"]],
  );
  const said = await records(t);
  assert.ok(
    said.some((m) =>
      /\(view, operate\) ran mesh assign hello --node n1: assigned n1\.hello/.test(m),
    ),
    JSON.stringify(said),
  );
  // The link logged in once: a second page cannot use it again.
  const again = await page.context().request.get(link, { maxRedirects: 0 });
  assert.equal(again.status(), 401);
  await keepScreenshot(page, "access-operate");
}

/** What another site could send with the operator's cookie: refused for its Origin. */
async function otherOrigin(page: Page, t: Steps): Promise<void> {
  const { csrf } = (await (await page.context().request.get(`${t.url}api/session`)).json()) as {
    csrf: string;
  };
  const response = await page.context().request.post(`${t.url}api/act`, {
    headers: {
      origin: "https://evil.example",
      "x-mesh-view": "1",
      "x-mesh-view-csrf": csrf,
      "content-type": "application/json",
    },
    data: { action: "assign", input: { module: "hello", remove: true, node: "n1" } },
  });
  assert.equal(response.status(), 403);
  assert.match(await response.text(), /evil\.example/);
  assert.equal((await assigned(t)).length, 1, "nothing was unassigned");
}

/**
 * The page's log out: the view forgets the session and clears its cookie; the old cookie, put
 * back as whoever kept it would, is refused for an action and for a read.
 */
async function logOut(page: Page, t: Steps): Promise<void> {
  const context = page.context();
  const { csrf } = (await (await context.request.get(`${t.url}api/session`)).json()) as {
    csrf: string;
  };
  const old = (await context.cookies()).find((c) => c.name.startsWith("mesh_view_session_"));
  assert.ok(old !== undefined, "the session's cookie");
  await page.locator("#logout").click();
  await page.locator("body", { hasText: "needs a login" }).waitFor();
  assert.equal(await page.locator("#grid").count(), 0);
  assert.deepEqual(
    (await context.cookies()).filter((c) => c.name === old.name),
    [],
    "the cookie is cleared",
  );
  await keepScreenshot(page, "access-logged-out");
  await context.addCookies([old]);
  const action = await context.request.post(`${t.url}api/act`, {
    headers: {
      origin: new URL(t.url).origin,
      "x-mesh-view": "1",
      "x-mesh-view-csrf": csrf,
      "content-type": "application/json",
    },
    data: { action: "assign", input: { module: "hello", remove: true, node: "n1" } },
  });
  assert.equal(action.status(), 401);
  assert.match(await action.text(), /needs a login/);
  assert.equal((await context.request.get(`${t.url}api/state`)).status(), 401);
  assert.equal((await assigned(t)).length, 1, "nothing was unassigned");
}

async function readOnly(page: Page, t: Steps): Promise<void> {
  const made = await cli<{ link: string }>(t, [
    "view-token",
    "--root",
    t.root,
    "--read-only",
    "--as",
    "bob",
  ]);
  assert.ok(made.link.startsWith(`${t.url}login?token=`), made.link);
  await openView(page, made.link);
  await page.locator('#who[data-access="read"]', { hasText: "bob" }).waitFor();
  // The page offers the action; the bus refuses it: view-read may write nothing.
  await page.locator('td.cell[data-node="n1"][data-module="hello"]').click();
  await page.locator('[data-action="unassign-node"]').click();
  await page.locator('[data-confirm="yes"]').click();
  const refused = page.locator("#action-result .result-bad");
  await refused.waitFor();
  assert.match(await refused.innerText(), /PERMISSION_DENIED/);
  assert.equal((await assigned(t)).length, 1, "the assignment stands");
  const said = await records(t);
  assert.ok(
    said.some((m) => /^bob \(view, read\) was refused mesh unassign hello --node n1/.test(m)),
    JSON.stringify(said),
  );
  // The certificate is the mesh's own, kept in the root.
  assert.match(await readFile(join(t.root, "tls", "view-cert.pem"), "utf8"), /BEGIN CERTIFICATE/);
  await keepScreenshot(page, "access-read-only-refused");
}
