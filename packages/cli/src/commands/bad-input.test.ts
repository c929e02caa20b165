/**
 * Bad input to the built command, case by case: each is answered with its code and an exit code
 * of 2 (usage) or 3 (refused) at once — never a stack trace, a hang, or INTERNAL.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { runMesh } from "../testing/run-mesh.js";
import { verbOptionsAfterVerb } from "../program.js";

describe("bad input to mesh", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mesh-bad-input-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const noTrace = (stderr: string): void => {
    assert.doesNotMatch(stderr, /\n\s+at |INTERNAL|node:internal/, stderr);
  };

  test("mesh call --timeout 1e12 (or past an hour) is a usage error, not a TIMEOUT", async () => {
    for (const timeout of ["1e12", "3600001", "-5", "5s"]) {
      const run = await runMesh(["call", "hello/greet", "{}", "--timeout", timeout], { cwd: dir });
      assert.equal(run.code, 2, `${timeout}: ${run.stderr}`);
      assert.match(run.stderr, /--timeout .* from 1 to 3600000.*\[USAGE\]/);
      noTrace(run.stderr);
    }
  });

  test("a verb run where there is no mesh says how to name the mesh's root", async () => {
    const here = await runMesh(["status"], { cwd: dir });
    assert.equal(here.code, 1, here.stderr);
    assert.match(
      here.stderr,
      /no mesh at the default root \.\/\.mesh: .*does not exist; .*--root DIR after the verb or MESH_ROOT=DIR.*\[CREDENTIAL_INVALID\]/s,
    );
    const fromEnv = await runMesh(["status"], { cwd: dir, env: { MESH_ROOT: join(dir, "gone") } });
    assert.match(fromEnv.stderr, new RegExp(`no mesh at MESH_ROOT=${join(dir, "gone")}: `));
    noTrace(here.stderr + fromEnv.stderr);
  });

  test("--root, --credential and --json are taken before the verb too", async () => {
    const run = await runMesh(["--root", join(dir, "elsewhere"), "--json", "status"], { cwd: dir });
    assert.doesNotMatch(run.stderr, /unknown option/);
    assert.match(run.stdout + run.stderr, /elsewhere\/credentials\/operator\.json/);
    assert.deepEqual(
      verbOptionsAfterVerb(["n", "m", "--root=D", "--json", "config", "set", "a", "b", "1"]),
      ["n", "m", "config", "set", "a", "b", "1", "--root=D", "--json"],
    );
    assert.deepEqual(
      verbOptionsAfterVerb(["n", "m", "--credential", "F", "call", "x/y", "--", "-1"]),
      ["n", "m", "call", "x/y", "--credential", "F", "--", "-1"],
    );
    assert.deepEqual(verbOptionsAfterVerb(["n", "m", "status", "--root", "D"]), [
      "n",
      "m",
      "status",
      "--root",
      "D",
    ]);
  });

  test("`all` where a module name is expected is refused as a name", async () => {
    const run = await runMesh(["call", "all/greet", "{}"], { cwd: dir });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /"all" is not a module name.*\[INVALID_NAME\]/);
    noTrace(run.stderr);
  });

  test("mesh manifest check of a FIFO answers at once instead of waiting for a writer", async () => {
    const fifo = join(dir, "mesh.yaml");
    execFileSync("mkfifo", [fifo]);
    const run = await runMesh(["manifest", "check", fifo], { cwd: dir, deadlineMs: 30_000 });
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /not a regular file.*\[REFUSED\]/);
    noTrace(run.stderr);
    await rm(fifo);
  });

  test("mesh manifest check of a 100k-line manifest is refused by its size limit", async () => {
    const file = join(dir, "big.yaml");
    const lines = ["module: big", ...Array.from({ length: 100_000 }, (_, i) => `k${i}: 1`)];
    await writeFile(file, lines.join("\n"));
    const run = await runMesh(["manifest", "check", file, "--json"], { cwd: dir });
    assert.equal(run.code, 3, run.stderr);
    const out = JSON.parse(run.stdout) as { code: string; problems: { code: string }[] };
    assert.equal(out.code, "MANIFEST_INVALID");
    assert.deepEqual(
      out.problems.map((p) => p.code),
      ["too-large"],
    );
  });
});
