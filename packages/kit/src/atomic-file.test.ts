import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { appendDurably, createFileOnce, writeFileAtomic } from "./atomic-file.js";

describe("writeFileAtomic and appendDurably", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mesh-atomic-"));
  after(() => rm(dir, { recursive: true, force: true }));

  test("replaces the content whole, with the mode asked, and leaves no temporary behind", async () => {
    const path = join(dir, "a", "state.json");
    await writeFileAtomic(path, "one\n");
    await writeFileAtomic(path, "two\n", { mode: 0o644 });
    assert.equal(await readFile(path, "utf8"), "two\n");
    assert.equal((await stat(path)).mode & 0o777, 0o644);
    assert.equal((await stat(join(dir, "a"))).mode & 0o777, 0o700);
    assert.deepEqual(await readdir(join(dir, "a")), ["state.json"]);
  });

  test("is 0600 unless told otherwise, even over a wider file", async () => {
    const path = join(dir, "secret");
    await writeFile(path, "old", { mode: 0o666 });
    await writeFileAtomic(path, new TextEncoder().encode("new"));
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal(await readFile(path, "utf8"), "new");
  });

  test("a failed rename leaves the old content and no temporary", async () => {
    const path = join(dir, "folder-in-the-way");
    await writeFileAtomic(join(path, "inside"), "x");
    await assert.rejects(writeFileAtomic(path, "over a folder"));
    assert.deepEqual(
      (await readdir(dir)).filter((name) => name.endsWith(".tmp")),
      [],
    );
  });

  test("an append makes the file (0600) and its folder (0700), then appends after what stands", async () => {
    const path = join(dir, "b", "journal");
    await appendDurably(path, "one\n");
    await appendDurably(path, new TextEncoder().encode("two\n"));
    assert.equal(await readFile(path, "utf8"), "one\ntwo\n");
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal((await stat(join(dir, "b"))).mode & 0o777, 0o700);
  });

  test("createFileOnce makes the file whole with its mode, once: a second call leaves it as it is", async () => {
    const path = join(dir, "once", "key");
    assert.equal(await createFileOnce(path, "first"), true);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal(await createFileOnce(path, "second", { mode: 0o644 }), false);
    assert.equal(await readFile(path, "utf8"), "first");
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    const many = await Promise.all(
      Array.from({ length: 8 }, (_, i) => createFileOnce(join(dir, "once", "raced"), `${i}`)),
    );
    assert.equal(many.filter(Boolean).length, 1, "one of those racing makes it");
    assert.deepEqual((await readdir(join(dir, "once"))).sort(), ["key", "raced"]);
  });
});
