/**
 * A module author's first hour, on a real mesh: `mesh init` writes a module outside the
 * repository; its own tests pass with `node --test`; `mesh module add` builds (type-checks) it;
 * its tool answers; its daemon reads and watches its config and finds its secret file; a config
 * value that breaks the declared type is refused naming the rule; an edit into a type error is a
 * failed build whose compiler message `mesh builds` shows, and the edit back builds again.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { startMeshUp, type MeshUp } from "../testing/mesh-up.js";
import { runMesh } from "../testing/run-mesh.js";
import { statusOf, until as waitUntil } from "../testing/until.js";

const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
const NODE = "init-one";

let root: string;
let work: string;
let dir: string;
let up: MeshUp | undefined;

async function mesh(args: readonly string[], input?: string) {
  return runMesh([...args, "--root", root], input === undefined ? {} : { input });
}

async function meshJson<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
  const run = await mesh([...args, "--json"]);
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

/** Polls `probe` until it gives something; a timeout carries `mesh status`. */
const until = <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> =>
  waitUntil(probe, ms, what, { explain: () => statusOf(root) });

async function greet(): Promise<string | undefined> {
  const run = await mesh(["call", "notes/greet", '{"name":"Ada"}', "--node", NODE, "--json"]);
  if (run.code !== 0) return undefined;
  return (JSON.parse(run.stdout) as { result?: { text?: string } }).result?.text;
}

async function condition(name: string): Promise<string | undefined> {
  const run = await mesh(["conditions", "--module", "notes", "--json"]);
  if (run.code !== 0) return undefined;
  const out = JSON.parse(run.stdout) as { conditions: { name: string; message: string }[] };
  return out.conditions.find((c) => c.name === name)?.message;
}

async function builds(): Promise<{ build: string; status: string; error?: string; log: string }[]> {
  return (await meshJson<{ builds: [] }>(["builds", "notes"])).builds;
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mesh-init-root-"));
  work = await mkdtemp(join(tmpdir(), "mesh-init-work-"));
  dir = join(work, "notes");
  up = await startMeshUp({ root, node: NODE });
});

after(async () => {
  await up?.stop();
  await rm(root, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

describe("mesh init to a running module", () => {
  test("mesh init writes a module outside the repository whose own tests pass with node --test", async () => {
    const init = await runMesh(["init", "notes", "--tools", "--daemon", "--dir", dir, "--json"]);
    assert.equal(init.code, 0, init.stderr);
    const written = JSON.parse(init.stdout) as { files: string[]; sdk: string };
    for (const file of [
      "mesh.yaml",
      "package.json",
      "tsconfig.json",
      "README.md",
      "src/tools.ts",
      "src/daemon.ts",
      "src/tools.test.ts",
    ])
      assert.ok(written.files.includes(file), `${file} is written`);
    assert.equal(written.sdk, `file:${join(REPO, "packages", "sdk")}`);
    const again = await runMesh(["init", "notes", "--dir", dir]);
    assert.equal(again.code, 3, "a folder that is not empty is refused");
    const check = await runMesh(["manifest", "check", dir]);
    assert.equal(check.code, 0, check.stdout);

    // As its README says: npm install (the SDK by its file: path; TypeScript and node's types
    // from the npm cache this repository's own install filled), then npm test.
    const npm = (...args: string[]) =>
      spawnSync("npm", [...args, "--prefer-offline", "--no-audit", "--no-fund"], {
        cwd: dir,
        encoding: "utf8",
        timeout: 300_000,
        // Its own test run, not a child of this one (which would report in the runner's format).
        env: { ...process.env, NODE_TEST_CONTEXT: undefined },
      });
    const install = npm("install");
    assert.equal(install.status, 0, `${install.stdout}${install.stderr}`);
    const tests = npm("test");
    assert.equal(tests.status, 0, `${tests.stdout}${tests.stderr}`);
    assert.match(tests.stdout, /# pass [1-9]/);
    assert.match(tests.stdout, /# fail 0/);
  });

  test("mesh module add builds it type-checked; its tool answers and its daemon reads its config", async () => {
    const added = await meshJson<{ build: { status: string; log: string } }>([
      "module",
      "add",
      dir,
      "--wait",
    ]);
    assert.equal(added.build.status, "built");
    assert.match(added.build.log, /type check \(tsconfig\.json\): .* no errors/);
    await meshJson(["assign", "notes", "--all"]);
    assert.equal(await until(greet, 150_000, "notes/greet to answer"), "Hello, Ada!");
    assert.equal(
      await until(() => condition("greeting"), 120_000, "the daemon's condition"),
      `Hello, ${NODE}!`,
    );
  });

  test("a config value that breaks the declared type is refused naming the rule; a good one reaches tool and daemon", async () => {
    const number = await mesh(["config", "set", "notes", "greeting", "42"]);
    assert.equal(number.code, 3);
    assert.match(number.stderr, /42 is an integer, not a string \(the rule type: "string"\)/);
    const empty = await mesh(["config", "set", "notes", "greeting", '""']);
    assert.equal(empty.code, 3);
    assert.match(empty.stderr, /shorter than 1 \(the rule minLength: 1\)/);
    await meshJson(["config", "set", "notes", "greeting", "Hi"]);
    await until(
      async () => ((await greet()) === "Hi, Ada!" ? true : undefined),
      60_000,
      "the tool to say Hi",
    );
    await until(
      async () => ((await condition("greeting")) === `Hi, ${NODE}!` ? true : undefined),
      60_000,
      "the daemon's watch to see Hi",
    );
  });

  test("the daemon finds its secret file by name", async () => {
    const manifest = await readFile(join(dir, "mesh.yaml"), "utf8");
    await writeFile(
      join(dir, "mesh.yaml"),
      manifest
        .replace(
          "    bundle: daemon\n",
          "    bundle: daemon\n    restart-on: [notes.need-api-token]\n",
        )
        .concat("  api-token:\n    path: api-token\n"),
    );
    const daemon = await readFile(join(dir, "src", "daemon.ts"), "utf8");
    await writeFile(
      join(dir, "src", "daemon.ts"),
      daemon
        .replace(
          'import { connectProcess } from "@mesh/sdk/process";',
          'import { readFile } from "node:fs/promises";\nimport { connectProcess, secretPath } from "@mesh/sdk/process";',
        )
        .replace(
          "const watching",
          'const tokenFile = secretPath("api-token");\nconst token = await readFile(tokenFile, "utf8").catch(() => "(not yet)");\nawait mesh.condition("token", "info", `${token.trim()} at ${tokenFile}`);\n\nconst watching',
        ),
    );
    // A build that may hold a new secret widens the module's rights: it waits for an operator.
    const ask = await until(
      async () => {
        const { asks } = await meshJson<{
          asks: { id: string; module: string; answer: unknown }[];
        }>(["asks"]);
        return asks.find((a) => a.module === "notes" && a.answer === null);
      },
      150_000,
      "the ask for the build that holds api-token",
    );
    // Once a built manifest declares it, the secret can be set.
    const set = await mesh(["secret", "set", "notes", "api-token"], "s3cret\n");
    assert.equal(set.code, 0, set.stderr);
    await meshJson(["answer", ask.id, "yes"]);
    const said = await until(
      async () => {
        const message = await condition("token");
        return message?.startsWith("s3cret ") === true ? message : undefined;
      },
      150_000,
      "the daemon to read its secret",
    );
    assert.equal(said, `s3cret at ${join(root, "secrets", "notes", "api-token")}`);
  });

  test("an edit into a type error is a failed build showing the compiler's message; the edit back builds", async () => {
    const tools = join(dir, "src", "tools.ts");
    const good = await readFile(tools, "utf8");
    const before = (await builds()).length;
    await writeFile(
      tools,
      good.replace(
        'text: greetingFor(await ctx.config.get("greeting"), name)',
        "text: name.length",
      ),
    );
    const failed = await until(
      async () => (await builds()).find((b) => b.status === "failed"),
      150_000,
      "the build of the type error to fail",
    );
    assert.match(
      failed.error ?? "",
      /type check \(tsconfig\.json\) found errors: src\/tools\.ts\(\d+,\d+\): error TS2322/,
    );
    const shown = await mesh(["builds", "notes"]);
    assert.match(shown.stdout, /failed/);
    assert.match(
      shown.stdout,
      /src\/tools\.ts\(\d+,\d+\): error TS2322: .*Type 'number' is not assignable to type 'string'/,
    );
    assert.equal(await greet(), "Hi, Ada!", "the running build keeps answering");
    await writeFile(tools, good);
    await until(
      async () => {
        const all = await builds();
        const newest = all.sort(
          (a, b) => Number(b.build.split("-")[0]) - Number(a.build.split("-")[0]),
        )[0];
        return all.length > before + 1 && newest?.status === "built" ? true : undefined;
      },
      150_000,
      "the edit back to build",
    );
    assert.equal(await until(greet, 120_000, "notes/greet after the edit back"), "Hi, Ada!");
  });
});
