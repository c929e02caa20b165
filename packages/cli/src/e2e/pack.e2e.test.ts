/**
 * The installable mesh (`npm run pack`): the CLI's and the SDK's tarballs installed into an empty
 * temporary prefix work outside the repository — `mesh up --demo --exit-when-ready` in an empty
 * folder brings the demo up from the examples inside the package, and a module written outside
 * the repository gets its types from the SDK's tarball and is built by the installed mesh.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { deadline, freePort } from "@mesh/bus/testing";
import { Env } from "@mesh/protocol";
import { startMeshUp, type MeshUp } from "../testing/mesh-up.js";

const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
const TSC = join(REPO, "node_modules", "typescript", "bin", "tsc");

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end within the deadline; its process is killed when the deadline passes. */
function run(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; ms?: number } = {},
): Promise<Run> {
  const child = spawn(file, args, {
    cwd: options.cwd ?? REPO,
    env: { ...process.env, [Env.credential]: "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const ended = new Promise<Run>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
  return deadline(ended, options.ms ?? 300_000, `${file} ${args.join(" ")}`).catch((error) => {
    if (child.exitCode === null) child.kill("SIGKILL");
    throw error;
  });
}

const ok = (r: Run, what: string): Run => {
  assert.equal(r.code, 0, `${what} exited ${String(r.code)}:\n${r.stdout}\n${r.stderr}`);
  return r;
};

let scratch: string;
let tarballs: { cli: string; sdk: string };
let mesh: string;
let env: NodeJS.ProcessEnv;
let up: MeshUp | undefined;

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mesh-pack-"));
  ok(
    await run(process.execPath, [join(REPO, "scripts", "pack.js"), "--out", join(scratch, "pack")]),
    "npm run pack",
  );
  tarballs = JSON.parse(await readFile(join(scratch, "pack", "tarballs.json"), "utf8")) as {
    cli: string;
    sdk: string;
  };
  const prefix = join(scratch, "prefix");
  ok(
    await run("npm", [
      "install",
      "--global",
      "--prefix",
      prefix,
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      tarballs.cli,
    ]),
    "npm install -g the CLI's tarball",
  );
  mesh = join(prefix, "bin", "mesh");
  // The installed command's code cache, and nothing of the repository's, on its way.
  env = { XDG_CACHE_HOME: join(scratch, "cache"), NODE_PATH: "" };
});

after(async () => {
  await up?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe("the packed mesh, installed into an empty prefix", () => {
  test("the packages carry what they need and no tests", async () => {
    for (const tarball of [tarballs.cli, tarballs.sdk]) {
      const listed = ok(await run("tar", ["tzf", tarball]), "tar tzf").stdout.split("\n");
      assert.deepEqual(
        listed.filter((f) => /\.test\.|\/test-support\/|\/testing\//.test(f)),
        [],
      );
      assert.ok(listed.includes("package/LICENSE"), `${tarball} has a license`);
    }
  });

  test("mesh up --demo --exit-when-ready in an empty folder brings up the demo", async () => {
    const empty = join(scratch, "empty");
    await mkdir(empty);
    const port = await freePort();
    const r = await run(
      mesh,
      ["up", "--demo", "--exit-when-ready", "--port", String(port), "--node", "packed"],
      { cwd: empty, env, ms: 900_000 },
    );
    ok(r, "mesh up --demo");
    assert.match(r.stdout, /The mesh is up/);
  });

  test("a module outside the repository gets the SDK's types and is built by the mesh", async () => {
    const module = join(scratch, "greeter");
    await mkdir(join(module, "src"), { recursive: true });
    await writeFile(
      join(module, "package.json"),
      JSON.stringify({ name: "greeter", private: true, type: "module" }),
    );
    await writeFile(
      join(module, "mesh.yaml"),
      [
        "module: greeter",
        "bundles:",
        "  - name: tools",
        "    language: typescript",
        "    entrypoints: [src/tools.ts]",
        "    loads: [src/tools.ts]",
        "",
      ].join("\n"),
    );
    await writeFile(
      join(module, "src", "tools.ts"),
      [
        'import { defineModule, defineTool, z } from "@mesh/sdk";',
        "const hi = defineTool({",
        '  name: "hi",',
        '  description: "Says hi.",',
        "  input: z.object({ name: z.string() }),",
        "  output: z.object({ text: z.string() }),",
        "  handler: ({ name }) => Promise.resolve({ text: `hi ${name}` }),",
        "});",
        "export default defineModule({ tools: [hi] });",
        "",
      ].join("\n"),
    );
    await writeFile(
      join(module, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          noEmit: true,
          skipLibCheck: false,
        },
        include: ["src"],
      }),
    );
    ok(
      await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarballs.sdk], {
        cwd: module,
      }),
      "npm install the SDK's tarball",
    );
    ok(await run(process.execPath, [TSC, "-p", module], { cwd: module }), "tsc on the module");
    // A type error is one: the types really come from the tarball.
    await writeFile(
      join(module, "src", "wrong.ts"),
      'import { defineTool } from "@mesh/sdk";\ndefineTool({ name: 1 });\n',
    );
    const wrong = await run(process.execPath, [TSC, "-p", module], { cwd: module });
    assert.notEqual(wrong.code, 0, "a wrong use of the SDK does not type-check");
    await rm(join(module, "src", "wrong.ts"));

    up = await startMeshUp({
      root: join(scratch, "root"),
      node: "packed-two",
      command: [mesh],
      cwd: scratch,
      env,
    });
    const added = ok(
      await run(mesh, ["module", "add", module, "--wait", "--json", "--root", up.root], {
        env,
        ms: 600_000,
      }),
      "mesh module add --wait",
    );
    assert.match(added.stdout, /"built"/);
  });
});
