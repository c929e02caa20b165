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
