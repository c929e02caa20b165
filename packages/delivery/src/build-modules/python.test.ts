/**
 * The python build module's work (decision 0161): the same source gives the same archive, from
 * copies in different folders and processes; the archive holds the source, mesh_sdk and the
 * bridge, and its process runs python3 under the bridge; a syntax error and a requirement that is
 * not vendored fail the build with what to do.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, it } from "node:test";
import { buildSource } from "../build-source.js";
import { archiveEntries } from "./test-archive.js";
import { folderWith, processManifest, tempFolder } from "../test-support.js";

const EXAMPLE = fileURLToPath(
  new URL("../../../../examples/modules/hello-python", import.meta.url),
);

describe("the python build module", () => {
  it("builds the example twice, from copies elsewhere with other file times, to the same digest", async () => {
    const copy = await tempFolder("hello-python-copy");
    await cp(EXAMPLE, copy, { recursive: true });
    const later = new Date(Date.UTC(2031, 1, 1));
    await utimes(join(copy, "main.py"), later, later);
    const first = await buildSource(EXAMPLE);
    const second = await buildSource(copy);
    assert.ok(first.ok && second.ok, first.ok ? (second.ok ? "" : second.log) : first.log);
    assert.equal(first.archives[0]?.digest, second.archives[0]?.digest);
    assert.equal(first.manifestDigest, second.manifestDigest);
    // And in another process, as a build module on another start would.
    const script = `import { buildSource } from ${JSON.stringify(new URL("../build-source.js", import.meta.url).href)};
const r = await buildSource(${JSON.stringify(copy)}); console.log(r.ok ? r.archives[0].digest : r.log);`;
    const { stdout } = await promisify(execFile)(process.execPath, [
      "--input-type=module",
      "-e",
      script,
    ]);
    assert.equal(stdout.trim(), first.archives[0]?.digest);

    const files = archiveEntries(first.archives[0]?.bytes ?? new Uint8Array());
    for (const path of [
      "main.py",
      "greeting.py",
      ".mesh/bridge.mjs",
      ".mesh/python/mesh_sdk/__init__.py",
    ])
      assert.ok(files.has(path), `${path} in ${[...files.keys()].join(", ")}`);
    assert.deepEqual(first.manifest.processes[0]?.run, [
      "node",
      ".mesh/bridge.mjs",
      "python3",
      "main.py",
    ]);
  });

  it("a syntax error fails the build with python3's words", async () => {
    const dir = await folderWith({
      "mesh.yaml": processManifest("snake", "python", "main.py"),
      "main.py": "def broken(:\n    pass\n",
    });
    const result = await buildSource(dir);
    assert.equal(result.ok, false);
    assert.match(
      result.ok ? "" : result.error,
      /python3 could not compile the source: .*SyntaxError/,
    );
  });

  it("a requirement that is not vendored fails the build naming it; one in vendor/ builds", async () => {
    const files = {
      "mesh.yaml": processManifest("deps", "python", "main.py"),
      "main.py": "import tinylib\n",
      "requirements.txt": "# pinned\ntinylib==1.0\n",
    };
    const dir = await folderWith(files);
    const refused = await buildSource(dir);
    assert.equal(refused.ok, false);
    assert.match(refused.ok ? "" : refused.error, /"tinylib", not vendored in vendor\//);
    await mkdir(join(dir, "vendor", "tinylib"), { recursive: true });
    await writeFile(join(dir, "vendor", "tinylib", "__init__.py"), "VALUE = 1\n");
    const built = await buildSource(dir);
    assert.ok(built.ok, built.ok ? "" : built.log);
    assert.ok(
      archiveEntries(built.archives[0]?.bytes ?? new Uint8Array()).has(
        "vendor/tinylib/__init__.py",
      ),
    );
  });
});
