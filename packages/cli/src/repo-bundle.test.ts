/**
 * The repository's CLI bundle (scripts/cli-bundle.js), which ./mesh runs: made into a temporary
 * folder from tsc's output, it answers as packages/cli/dist/main.js does, finds what ships in the
 * checkout (each module keeps its own `import.meta.url`), reports an error as one coded line, and
 * keeps its code cache beside itself.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { MESH_MAIN } from "./testing/run-mesh.js";
import { run, type Run } from "./testing/packed.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** Node on `args`, from where the test runs, without a credential or root from outside. */
const node = (args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> =>
  run(process.execPath, args, { cwd: process.cwd(), env: { MESH_ROOT: "", ...env }, ms: 120_000 });

describe("the repository's CLI bundle", () => {
  let dir: string;
  let bundle: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mesh-repo-bundle-"));
    const script = pathToFileURL(join(REPO, "scripts", "cli-bundle.js")).href;
    const { bundleCli } = (await import(script)) as {
      bundleCli: (o: { outdir: string; packed: boolean }) => Promise<void>;
    };
    await bundleCli({ outdir: dir, packed: false });
    bundle = join(dir, "mesh.js");
  });

  after(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test("--help and --version answer as tsc's output does", async () => {
    for (const args of [["--help"], ["--version"], ["mcp", "--help"]]) {
      const [fromBundle, fromMain] = await Promise.all([
        node([bundle, ...args]),
        node([MESH_MAIN, ...args]),
      ]);
      assert.equal(fromBundle.code, 0, fromBundle.stderr);
      assert.equal(fromBundle.stdout, fromMain.stdout, args.join(" "));
    }
  });

  test("keeps its code cache beside itself, and the next run takes it", async () => {
    const cached = await readdir(join(dir, "cache"));
    assert.equal(cached.length, 1, cached.join(", "));
    assert.match(cached[0] ?? "", /^cli-[0-9a-f]{32}\.v8$/);
    const again = await node([bundle, "--version"]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(await readdir(join(dir, "cache")), cached);
  });

  test("resolves from the checkout: `mesh init` depends on the workspace's own SDK", async () => {
    const target = join(dir, "made");
    const made = await node([bundle, "init", "made", "--dir", target, "--json"]);
    assert.equal(made.code, 0, `${made.stdout}${made.stderr}`);
    const answer = JSON.parse(made.stdout) as { sdk: string };
    assert.equal(answer.sdk, `file:${join(REPO, "packages", "sdk")}`);
    assert.ok(existsSync(join(target, "mesh.yaml")));
  });

  test("an error is one coded line and the verb's exit code", async () => {
    const missing = join(dir, "no-such-root");
    const [fromBundle, fromMain] = await Promise.all([
      node([bundle, "status", "--root", missing]),
      node([MESH_MAIN, "status", "--root", missing]),
    ]);
    assert.equal(fromBundle.code, fromMain.code);
    assert.notEqual(fromBundle.code, 0);
    assert.match(fromBundle.stderr, /CREDENTIAL_INVALID/);
    assert.equal(fromBundle.stderr, fromMain.stderr);
  });
});
