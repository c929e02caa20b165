/**
 * The mesh end to end, as an operator meets it (docs/design.md "One change, end to end"): `mesh up`
 * on an empty root, the examples added and assigned with the CLI, hello's tool answering and its
 * greeting changed live, counter counting and board reading it, broken's crashing second build set
 * back to its last healthy one, a put pinning a build and an unput releasing it, a second node
 * joining from another root and running hello too, and Ctrl-C leaving no process behind.
 * Everything is real: the bus, every process, every build.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { launch } from "@mesh/view/testing";
import { KvBucket, MeshBus } from "@mesh/bus";
import { deadline, processesNaming } from "@mesh/bus/testing";
import { Bucket, MeshPart, nodeModuleKey } from "@mesh/protocol";
import { startMeshUp, type MeshUp, type MeshUpReport } from "../testing/mesh-up.js";
import { runMesh } from "../testing/run-mesh.js";
import { statusOf, until as waitUntil } from "../testing/until.js";

const MAIN = fileURLToPath(new URL("../main.js", import.meta.url));
const EXAMPLES = fileURLToPath(new URL("../../../../examples/modules", import.meta.url));
const NODE = "e2e-one";
const SECOND = "e2e-two";

let root: string;
let second: string;
let sources: string;
let up: MeshUp | undefined;
let join2: ChildProcess | undefined;
let report: MeshUpReport & { readonly view: string };
let operator: MeshBus;

async function meshJson(args: readonly string[]): Promise<Record<string, unknown>> {
  const run = await runMesh([...args, "--root", root, "--json"]);
  assert.equal(
    run.code,
    0,
    `mesh ${args.join(" ")} exited ${String(run.code)}: ${run.stdout}${run.stderr}`,
  );
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** Calls a tool and returns its result, or undefined when it does not answer yet. */
async function call(
  tool: string,
  input: unknown,
  node = NODE,
): Promise<Record<string, unknown> | undefined> {
  const run = await runMesh([
    "call",
    tool,
    JSON.stringify(input),
    "--node",
    node,
    "--root",
    root,
    "--json",
  ]);
  if (run.code !== 0) return undefined;
  const out = JSON.parse(run.stdout) as { ok: boolean; result?: Record<string, unknown> };
  return out.ok ? out.result : undefined;
}

/** Polls `probe` until it gives something; a timeout carries `mesh status`. */
const until = <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> =>
  waitUntil(probe, ms, what, { explain: () => statusOf(root) });

async function have(node: string, module: string) {
  return (await (await KvBucket.open(operator, Bucket.have)).get(nodeModuleKey(node, module)))
    ?.value;
}

async function want(node: string, module: string) {
  return (await (await KvBucket.open(operator, Bucket.wants)).get(nodeModuleKey(node, module)))
    ?.value;
}

async function builtBuilds(module: string): Promise<string[]> {
  const builds = await KvBucket.open(operator, Bucket.builds);
  const out: string[] = [];
  for (const key of await builds.keys(`${module}.*`)) {
    const entry = await builds.get(key);
    if (entry?.value.status === "built") out.push(entry.value.build);
  }
  return out.sort((a, b) => Number(a.split("-")[0]) - Number(b.split("-")[0]));
}

/** Every process whose command line or environment names one of our roots. */
async function processesOf(...roots: string[]): Promise<number[]> {
  return (await Promise.all(roots.map((r) => processesNaming(r)))).flat();
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mesh-e2e-root-"));
  second = await mkdtemp(join(tmpdir(), "mesh-e2e-second-"));
  sources = await mkdtemp(join(tmpdir(), "mesh-e2e-sources-"));
  // The examples are copied, so the test can change their sources without touching the repo.
  for (const example of ["hello", "counter", "board", "broken"]) {
    await cp(join(EXAMPLES, example), join(sources, example), { recursive: true });
  }
  up = await startMeshUp({ root, node: NODE });
  assert.ok(up.report.view !== undefined, "mesh up serves the view");
  report = { ...up.report, view: up.report.view };
  operator = await MeshBus.connectWithFile(report.credentials.operator);
});

after(async () => {
  await operator?.close();
  join2?.kill("SIGINT");
  await up?.stop();
  for (const pid of await processesOf(root, second)) process.kill(pid, "SIGKILL");
  await rm(root, { recursive: true, force: true });
  await rm(second, { recursive: true, force: true });
  await rm(sources, { recursive: true, force: true });
});

describe("one change, end to end", () => {
  test("the examples are added and assigned with the CLI, and hello's tool answers", async () => {
    for (const example of ["hello", "counter", "board", "broken"]) {
      await meshJson(["module", "add", join(sources, example)]);
      await meshJson(["assign", example, "--all"]);
    }
    const greeting = await until(
      () => call("hello/greet", { name: "Ada" }),
      150_000,
      "hello to answer",
    );
    assert.equal(greeting["text"], "Hello, Ada!");
    // Every module settles healthy (the runtime restarts as each tools bundle arrives).
    await until(
      async () => {
        for (const module of ["node-tools", "hello", "counter", "board", "broken"]) {
          if ((await have(NODE, module))?.health !== "healthy") return undefined;
        }
        return true;
      },
      150_000,
      "every module healthy",
    );
  });

  test("mesh config set changes hello's answer, and nothing restarts", async () => {
    const before = await have(NODE, "node-tools");
    assert.equal(before?.health, "healthy");
    await meshJson(["config", "set", "hello", "greeting", '"Hi"']);
    await until(
      async () =>
        (await call("hello/greet", { name: "Ada" }))?.["text"] === "Hi, Ada!" ? true : undefined,
      60_000,
      "the new greeting",
    );
    const afterChange = await have(NODE, "node-tools");
    assert.equal(afterChange?.restarts, before?.restarts, "the runtime did not restart");
    assert.equal(afterChange?.since, before?.since);
  });

  test("counter counts, and board reads what counter keeps", async () => {
    const first = await until(() => call("counter/read", {}), 120_000, "counter to answer");
    const later = await until(
      async () => {
        const now = await call("counter/read", {});
        return Number(now?.["total"]) > Number(first["total"]) ? now : undefined;
      },
      60_000,
      "counter's total to grow",
    );
    const board = await until(() => call("board/show", {}), 120_000, "board to answer");
    assert.ok(
      Number(board["total"]) >= Number(later["total"]),
      `board saw ${String(board["total"])}`,
    );
  });

  test("broken's crashing second build is set back to its last healthy build, with a condition", async () => {
    const [firstBuild] = await until(
      async () =>
        (await have(NODE, "broken"))?.health === "healthy" ? builtBuilds("broken") : undefined,
      150_000,
      "broken's first build to run healthy",
    );
    assert.ok(firstBuild !== undefined);
    await writeFile(join(sources, "broken", "src", "mode.json"), '{ "mode": "crash" }\n');
    const setBack = await until(
      async () => {
        const w = await want(NODE, "broken");
        return w?.rule === "set-back" ? w : undefined;
      },
      150_000,
      "the set-back",
    );
    assert.equal(setBack.build, firstBuild);
    const conditions = await meshJson(["conditions", "--module", MeshPart.assigner]);
    assert.match(JSON.stringify(conditions), /broken/);
    await until(
      async () => {
        const h = await have(NODE, "broken");
        return h?.health === "healthy" && h.build === firstBuild ? true : undefined;
      },
      150_000,
      "broken back on its healthy build",
    );
  });

  test("a put pins a build and an unput releases it", async () => {
    const [first] = await builtBuilds("hello");
    assert.ok(first !== undefined);
    await writeFile(join(sources, "hello", "src", "extra.ts"), "export const extra = 2;\n");
    const newest = await until(
      async () => {
        const builds = await builtBuilds("hello");
        const last = builds.at(-1);
        return last !== undefined && last !== first && (await want(NODE, "hello"))?.build === last
          ? last
          : undefined;
      },
      150_000,
      "hello's second build to be wanted",
    );
    await meshJson(["put", "hello", first]);
    const pinned = await until(
      async () => {
        const w = await want(NODE, "hello");
        return w?.rule === "put" && w.build === first ? w : undefined;
      },
      120_000,
      "the put to pin the first build",
    );
    assert.equal(pinned.build, first);
    await meshJson(["unput", "hello"]);
    await until(
      async () => ((await want(NODE, "hello"))?.build === newest ? true : undefined),
      120_000,
      "the unput to release it",
    );
  });

  test("the view shows the examples healthy, follows a CLI change live, answers an ask, calls a tool", async () => {
    const browser = await launch();
    let page: Page | undefined;
    try {
      page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      await page.goto(report.view);
      await page.waitForSelector("body[data-ready]");
      const cell = (module: string) =>
        page!.locator(`td.cell[data-node="${NODE}"][data-module="${module}"]`);
      for (const module of ["hello", "counter", "board", "broken", "node-tools"]) {
        await cell(module)
          .and(page.locator('[data-health="healthy"]'))
          .waitFor({ timeout: 60_000 });
      }
      // A change made with the CLI appears without a reload.
      await meshJson(["unassign", "broken", "--all"]);
      await cell("broken")
        .and(page.locator('[data-health="healthy"]'))
        .waitFor({ state: "detached", timeout: 120_000 });
      // A build that widens what board may call waits for an operator's yes, asked in the view.
      const manifest = join(sources, "board", "mesh.yaml");
      await writeFile(manifest, `${await readFile(manifest, "utf8")}calls:\n  - hello/greet\n`);
      const ask = page.locator('[data-ask-id]:not([data-answered]) button[data-answer="yes"]');
      await ask.first().waitFor({ timeout: 300_000 });
      await ask.first().click();
      await until(
        async () => {
          const builds = await builtBuilds("board");
          const w = await want(NODE, "board");
          return builds.length >= 2 && w?.build === builds.at(-1) ? true : undefined;
        },
        120_000,
        "board's widening build to be wanted after the yes",
      );
      // A tool called from its form.
      const subject = `mesh.tools.${NODE}.hello.greet`;
      await page.locator(`button[data-tool="${subject}"]`).first().click();
      const form = page.locator(`form#tool-call[data-subject="${subject}"]`);
      await form.getByLabel("name").fill("Ada");
      await form.locator("button[type=submit]").click();
      const result = form.locator(".result-ok pre");
      await result.waitFor({ timeout: 60_000 });
      assert.match(await result.innerText(), /Hi, Ada!/);
    } catch (error) {
      const shot = join(tmpdir(), `mesh-e2e-view-${Date.now()}.png`);
      await page?.screenshot({ path: shot, fullPage: true }).catch(() => undefined);
      process.stderr.write(`the view step failed; the page is saved at ${shot}\n`);
      throw error;
    } finally {
      await browser.close();
    }
  });

  test("a second node joins from another root and runs hello too", async () => {
    const token = await meshJson(["join-token"]);
    join2 = spawn(
      process.execPath,
      [
        MAIN,
        "join",
        report.bus.url,
        "--token",
        String(token["token"]),
        "--node",
        SECOND,
        "--root",
        second,
        // In the foreground, Ctrl-C stops the node's processes too (a host under a supervisor
        // leaves them for the next host to adopt).
        "--stop-processes-on-exit",
      ],
      { stdio: ["ignore", "ignore", "ignore"] },
    );
    const greeting = await until(
      () => call("hello/greet", { name: "Grace" }, SECOND),
      150_000,
      "hello on the second node",
    );
    assert.match(String(greeting["text"]), /, Grace!$/);
  });

  test("Ctrl-C leaves no process behind", async () => {
    const joined = join2;
    join2 = undefined;
    if (joined !== undefined) {
      const exited = new Promise((resolve) => joined.once("exit", resolve));
      joined.kill("SIGINT");
      await deadline(exited, 60_000, "the second node to stop");
    }
    await operator.close();
    up?.child.kill("SIGINT");
    assert.equal(await deadline(up?.exited ?? Promise.resolve(null), 60_000, "mesh up to stop"), 0);
    up = undefined;
    const left = await deadline(
      (async () => {
        for (let i = 0; i < 120; i++) {
          const pids = await processesOf(root, second);
          if (pids.length === 0) return [];
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        const pids = await processesOf(root, second);
        return Promise.all(
          pids.map(
            async (pid) =>
              `${pid}: ${(await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).replaceAll("\0", " ")}`,
          ),
        );
      })(),
      60_000,
      "every process of the mesh to end",
    );
    assert.deepEqual(left, []);
    for (const pid of [report.bus.pid, ...Object.values(report.processes)]) {
      assert.throws(() => process.kill(pid, 0), { code: "ESRCH" });
    }
  });
});
