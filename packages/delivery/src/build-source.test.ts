import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cp, mkdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { buildSource } from "./build-source.js";
import { directoryDigest } from "./source.js";
import { packArchive } from "./pack.js";
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import {
  folderWith,
  prebuiltManifest,
  processManifest,
  tempFolder,
  toolsManifest,
} from "./test-support.js";

export const writeModule = (files: Record<string, string>, name = "hello"): Promise<string> =>
  folderWith(files, `src-${name}`);

const HELLO = {
  "mesh.yaml": toolsManifest("hello"),
  "src/tools.ts": 'import { greet } from "./greet.js";\nexport const tools = { greet };\n',
  "src/greet.ts": "export const greet = (name: string): string => `Hello, ${name}`;\n",
  ".gitignore": "scratch/\n",
  "scratch/notes.txt": "not part of the source\n",
};

describe("buildSource", () => {
  it("the same source built twice, from copies in different folders at different times, gives the same digests", async () => {
    const a = await writeModule(HELLO);
    const b = await tempFolder("src-copy-elsewhere");
    await cp(a, b, { recursive: true });
    // Different file times in the copy: nothing of them may reach the archive.
    const later = new Date(Date.UTC(2031, 5, 1));
    for (const f of ["src/tools.ts", "src/greet.ts", "mesh.yaml"])
      await utimes(join(b, f), later, later);
    const first = await buildSource(a);
    const second = await buildSource(b);
    assert.ok(first.ok && second.ok, first.ok ? "" : first.log);
    assert.equal(first.manifestDigest, second.manifestDigest);
    assert.deepEqual(
      first.archives.map((x) => x.digest),
      second.archives.map((x) => x.digest),
    );
    assert.equal(first.manifest.bundles[0]?.digest, first.archives[0]?.digest);
    assert.equal(await directoryDigest(a), await directoryDigest(b));
  });

  it("a package found outside the module's folder is named alike wherever it is kept: the same digest from an origin elsewhere", async () => {
    // A CommonJS package (esbuild keys it by path) in node_modules beside the module: the copy
    // leaves node_modules behind and the build finds it above the origin, as the mesh's own.
    const files = {
      "mesh.yaml": processManifest("tiny", "typescript", "src/main.ts"),
      "src/main.ts": 'import { shout } from "tiny-shout";\nconsole.log(shout("hi"));\n',
      "node_modules/tiny-shout/package.json": '{ "name": "tiny-shout", "main": "index.js" }\n',
      "node_modules/tiny-shout/index.js": "exports.shout = (s) => s.toUpperCase();\n",
    };
    const near = await folderWith(files, "origin-near");
    const far = join(await tempFolder("origin-far"), "a", "much", "deeper", "folder");
    await mkdir(far, { recursive: true });
    await cp(near, far, { recursive: true });
    const first = await buildSource(near);
    const second = await buildSource(far);
    assert.ok(first.ok && second.ok, first.ok ? (second.ok ? "" : second.log) : first.log);
    assert.equal(first.archives[0]?.digest, second.archives[0]?.digest);
    const text = gunzipSync(first.archives[0]?.bytes ?? new Uint8Array()).toString("latin1");
    assert.match(text, /"node_modules\/tiny-shout\/index\.js"/);
    assert.doesNotMatch(text, /origin-near/, "the folder it was built from is in the archive");
  });

  it("the directory digest ignores .gitignore'd files and node_modules, and sees a change", async () => {
    const dir = await writeModule(HELLO);
    const before = await directoryDigest(dir);
    await writeFile(join(dir, "scratch", "more.txt"), "x");
    await mkdir(join(dir, "node_modules", "x"), { recursive: true });
    await writeFile(join(dir, "node_modules", "x", "index.js"), "x");
    assert.equal(await directoryDigest(dir), before);
    await writeFile(join(dir, "src", "greet.ts"), "export const greet = (n: string) => n;\n");
    assert.notEqual(await directoryDigest(dir), before);
  });

  it("a compile error gives a failed build with the compiler's message in its log", async () => {
    const dir = await writeModule({
      ...HELLO,
      "src/greet.ts": "export const greet = (name: string => {\n",
    });
    const result = await buildSource(dir);
    assert.equal(result.ok, false);
    assert.match(result.log, /src\/greet\.ts:1:\d+: error: Expected/);
  });

  it("a bad manifest gives a failed build with every problem", async () => {
    const dir = await writeModule({ ...HELLO, "mesh.yaml": "module: Hello\nbundles: 3\n" });
    const result = await buildSource(dir);
    assert.equal(result.ok, false);
    assert.match(result.log, /module/);
    assert.match(result.log, /bundles/);
  });

  it("a prebuilt bundle is taken from its source after its digest is checked; a wrong digest fails the build", async () => {
    const archive = packArchive([{ path: "bin/run.js", bytes: Buffer.from("console.log(1);\n") }]);
    const digest = createHash("sha256").update(archive).digest("hex");
    const dir = await writeModule(
      { "mesh.yaml": prebuiltManifest("dist/app.tar.gz", digest) },
      "pre",
    );
    await mkdir(join(dir, "dist"), { recursive: true });
    await writeFile(join(dir, "dist", "app.tar.gz"), archive);
    const good = await buildSource(dir);
    assert.ok(good.ok, good.log);
    assert.equal(good.archives[0]?.digest, digest, "repacked to the same bytes");
    await writeFile(join(dir, "mesh.yaml"), prebuiltManifest("dist/app.tar.gz", "0".repeat(64)));
    const bad = await buildSource(dir);
    assert.equal(bad.ok, false);
    assert.match(bad.log, /has digest [0-9a-f]{64}, not the 0{64}/);
  });

  it("a module's own dependencies in its node_modules are bundled in, though the copy leaves node_modules out", async () => {
    const dir = await writeModule({
      ...HELLO,
      "src/tools.ts": 'import pad from "pad-it";\nexport const tools = { padded: pad("x") };\n',
      "node_modules/pad-it/package.json": '{ "name": "pad-it", "main": "index.js" }',
      "node_modules/pad-it/index.js": 'module.exports = (s) => "[PAD-IT]" + s;\n',
    });
    const result = await buildSource(dir);
    assert.ok(result.ok, result.ok ? "" : result.log);
  });
});
