import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, readdir, readlink, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { sha256 } from "@mesh/bus";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import {
  cachePath,
  checkBundlePath,
  fetchVerified,
  placeBundle,
  removeBundle,
  unpackBeside,
  type ArchiveLimits,
} from "./archives.js";
import { bundleOf, rawTar, tempRoot, type RawEntry } from "./test-support.js";

const LIMITS: ArchiveLimits = { maxBytes: 1024 * 1024, maxEntries: 50 };
let root: string;
before(async () => {
  root = await tempRoot();
});
after(() => rm(root, { recursive: true, force: true }));

/** Everything under `folder`, as relative paths. */
async function listAll(folder: string): Promise<string[]> {
  return ((await readdir(folder, { recursive: true }).catch(() => [])) as string[]).sort();
}

async function unpack(bytes: Uint8Array, module: string): Promise<string> {
  const digest = sha256(bytes);
  const file = await fetchVerified({
    root,
    module,
    source: `mesh-artifacts/${digest}`,
    digest,
    fetch: () => Promise.resolve(bytes),
  });
  const path = join(root, "bundles", module, "main");
  await unpackBeside({ file, path, digest, module, limits: LIMITS });
  await placeBundle(path, digest);
  return path;
}

describe("archives", () => {
  test("a good bundle is unpacked beside its path and linked into place; a new version replaces it", async () => {
    const path = await unpack(await bundleOf({ "main.js": "1", "lib/a.js": "a" }), "good");
    assert.equal(await readFile(join(path, "main.js"), "utf8"), "1");
    assert.equal(await readFile(join(path, "lib/a.js"), "utf8"), "a");
    const second = await bundleOf({ "main.js": "2" });
    await unpack(second, "good");
    assert.equal(await readFile(join(path, "main.js"), "utf8"), "2");
    assert.equal(await readlink(path), `.main@${sha256(second)}`);
    // The old version is gone: only the link and the current version remain.
    assert.deepEqual((await readdir(join(root, "bundles", "good"))).sort(), [
      ".main@" + sha256(second),
      "main",
    ]);
    await removeBundle(path);
    assert.deepEqual(await listAll(join(root, "bundles", "good")), []);
  });

  test("a verified archive is kept in the cache and not fetched again", async () => {
    const bytes = await bundleOf({ "x.js": "x" });
    const digest = sha256(bytes);
    let fetched = 0;
    const fetch = () => {
      fetched += 1;
      return Promise.resolve(bytes);
    };
    const input = { root, module: "cached", source: `mesh-artifacts/${digest}`, digest, fetch };
    assert.equal(await fetchVerified(input), cachePath(root, digest));
    await fetchVerified(input);
    await fetchVerified({ ...input, fetch: undefined });
    assert.equal(fetched, 1);
  });

  test("bytes that do not match the digest are refused with DIGEST_MISMATCH and not kept", async () => {
    const digest = sha256(await bundleOf({ "a.js": "a" }));
    const other = await bundleOf({ "a.js": "evil" });
    await assert.rejects(
      fetchVerified({
        root,
        module: "m",
        source: `mesh-artifacts/${digest}`,
        digest,
        fetch: () => Promise.resolve(other),
      }),
      (e: unknown) => isMeshError(e, ErrorCode.DIGEST_MISMATCH),
    );
    await assert.rejects(readFile(cachePath(root, digest)));
  });

  test("a source other than the artifact store is refused", async () => {
    const digest = sha256(Buffer.from("x"));
    await assert.rejects(
      fetchVerified({
        root,
        module: "m",
        source: `elsewhere/${digest}`,
        digest,
        fetch: () => Promise.resolve(Buffer.from("x")),
      }),
      (e: unknown) => isMeshError(e, ErrorCode.ARCHIVE_REFUSED),
    );
  });

  test("a bundle path outside <root>/bundles/<module>/ is refused", () => {
    assert.throws(
      () => checkBundlePath(root, "m", "/etc/m"),
      (e: unknown) => isMeshError(e, ErrorCode.ARCHIVE_REFUSED),
    );
    assert.throws(
      () => checkBundlePath(root, "m", join(root, "bundles", "other", "b")),
      (e: unknown) => isMeshError(e, ErrorCode.ARCHIVE_REFUSED),
    );
    checkBundlePath(root, "m", join(root, "bundles", "m", "b"));
  });

  const hostile: Array<[string, RawEntry[]]> = [
    [
      "a ../ entry",
      [
        { name: "ok.js", type: "0", data: "x" },
        { name: "../../escaped.txt", type: "0", data: "pwned" },
      ],
    ],
    ["an absolute path", [{ name: "/tmp/mesh-absolute-escape.txt", type: "0", data: "pwned" }]],
    ["a symbolic link out", [{ name: "out", type: "2", linkname: "../../../../etc" }]],
    ["an absolute symbolic link", [{ name: "out", type: "2", linkname: "/etc" }]],
    [
      "a file written through a link",
      [
        { name: "d", type: "2", linkname: "." },
        { name: "d/x", type: "0", data: "x" },
      ],
    ],
    ["a hard link", [{ name: "h", type: "1", linkname: "/etc/passwd" }]],
    // Found by the archive fuzz: each of these made tar's extraction wait forever.
    ["a link to a folder it is in", [{ name: "d/a.js", type: "2", linkname: "d" }]],
    ["a link into itself", [{ name: "d", type: "2", linkname: "d/a.js" }]],
    ["a link with a body", [{ name: "l", type: "2", linkname: "a.js", data: "abcdef" }]],
    [
      "a link to a link",
      [
        { name: "a", type: "2", linkname: "b" },
        { name: "b", type: "2", linkname: "a" },
      ],
    ],
    ["a character device", [{ name: "null", type: "3" }]],
    ["a block device", [{ name: "disk", type: "4" }]],
    ["a FIFO", [{ name: "pipe", type: "6" }]],
    ["a set-user-id file", [{ name: "suid", type: "0", data: "x", mode: 0o4755 }]],
    ["a bomb (more bytes than allowed)", [{ name: "zeros", type: "0", size: 64 * 1024 * 1024 }]],
    [
      "too many entries",
      Array.from({ length: 60 }, (_, i) => ({ name: `f${i}`, type: "0" as const, data: "x" })),
    ],
  ];
  for (const [what, entries] of hostile) {
    test(`${what} is refused with ARCHIVE_REFUSED and nothing is written anywhere`, async () => {
      const module = `hostile${hostile.findIndex(([w]) => w === what)}`;
      const before = await listAll(root);
      await assert.rejects(unpack(rawTar(entries), module), (e: unknown) =>
        isMeshError(e, ErrorCode.ARCHIVE_REFUSED),
      );
      const after = (await listAll(root)).filter((p) => !p.startsWith("cache"));
      assert.deepEqual(
        after,
        before.filter((p) => !p.startsWith("cache")),
      );
      await assert.rejects(readFile("/tmp/mesh-absolute-escape.txt"));
      await assert.rejects(readFile(join(root, "..", "escaped.txt")));
    });
  }

  test("leftovers of an interrupted unpack are removed by the next one", async () => {
    const folder = join(root, "bundles", "crashed");
    await mkdir(join(folder, ".main.unpack-dead"), { recursive: true });
    await writeFile(join(folder, ".main.unpack-dead", "half"), "x");
    const path = await unpack(await bundleOf({ "a.js": "a" }), "crashed");
    assert.deepEqual(
      (await readdir(folder)).filter((n) => n.includes("unpack")),
      [],
    );
    assert.equal(await readFile(join(path, "a.js"), "utf8"), "a");
  });
});
