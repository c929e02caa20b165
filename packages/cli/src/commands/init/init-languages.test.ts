/**
 * `mesh init --language python|go` writes the shipped example's module under the given name, and
 * its own test passes without a mesh (go's offline, as init's next step says); another language
 * is refused naming those init writes.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, test } from "node:test";
import { withTempDir } from "@mesh/bus/testing";
import { runMesh } from "../../testing/run-mesh.js";

const run = promisify(execFile);

describe("mesh init --language", () => {
  test("python: a daemon with a tool under the module's name, whose unittest passes", async () => {
    await withTempDir("init-python", async (dir) => {
      const folder = join(dir, "notes");
      const made = await runMesh([
        "init",
        "notes",
        "--language",
        "python",
        "--dir",
        folder,
        "--json",
      ]);
      assert.equal(made.code, 0, made.stderr);
      assert.match(await readFile(join(folder, "mesh.yaml"), "utf8"), /^module: notes$/m);
      assert.match(await readFile(join(folder, "mesh.yaml"), "utf8"), /language: python/);
      const { stderr } = await run("python3", ["-m", "unittest"], { cwd: folder });
      assert.match(stderr, /OK/);
    });
  });

  test("go: a go.mod module with the module's name, whose go test passes offline as init says", async () => {
    await withTempDir("init-go", async (dir) => {
      const folder = join(dir, "notes");
      const made = await runMesh(["init", "notes", "--language", "go", "--dir", folder]);
      assert.equal(made.code, 0, made.stderr);
      assert.match(await readFile(join(folder, "go.mod"), "utf8"), /^module notes$/m);
      assert.match(await readFile(join(folder, "mesh.yaml"), "utf8"), /language: go/);
      assert.match(await readFile(join(folder, "main.go"), "utf8"), /"notes\/greeting"/);
      // The next step init prints, run as printed, with no Go module proxy to reach.
      const step = /cd \S+ && (go test .*)$/m.exec(made.stdout)?.[1];
      assert.equal(step, "go test ./greeting", made.stdout);
      const { stdout } = await run("go", ["test", "./greeting"], {
        cwd: folder,
        env: { ...process.env, GOPROXY: "off", GOFLAGS: "-mod=mod" },
        timeout: 300_000,
      });
      assert.match(stdout, /^ok\s+notes\/greeting/m);
    });
  });

  test("another language is refused with the languages init writes", async () => {
    const refused = await runMesh(["init", "x", "--language", "rust", "--dir", "/nonexistent/x"]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /typescript, python, go, not "rust"/);
  });
});
