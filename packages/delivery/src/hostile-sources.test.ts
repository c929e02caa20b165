/**
 * Hostile sources at registration and in the builder, without a bus: archives with entries a
 * node would refuse, decompression bombs, FIFOs where files are expected, and prebuilt sources
 * outside the module's own folder. Each is refused with a code, at once, naming what is wrong,
 * and nothing is written outside the work folder.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { deadline } from "@mesh/bus/testing";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { checkArchiveBytes } from "./archive-check.js";
import { buildSource } from "./build-source.js";
import { packArchive } from "./pack.js";
import { parseSourceArgument, readSourceManifest } from "./register.js";
import { materialise } from "./source.js";
import { rawTar, rawTarStream, type RawEntry } from "@mesh/bus/testing";
import { prebuiltManifest, tempFolder } from "./test-support.js";

const tempDir = (name: string): Promise<string> => tempFolder(`hostile-${name}`);

const MANIFEST: RawEntry = {
  name: "mesh.yaml",
  type: "0",
  data: "module: evil\nbundles:\n  - name: tools\n    language: typescript\n    entrypoints: [t.ts]\n    loads: [t.ts]\n",
};

/** Registers the archive as `mesh module add` does, up to the bus write. */
async function register(bytes: Uint8Array): Promise<unknown> {
  const dir = await tempDir("archive");
  const file = join(dir, "module.tar.gz");
  await writeFile(file, bytes);
  return readSourceManifest(await parseSourceArgument(file));
}

const refusedNaming =
  (...names: string[]) =>
  (e: unknown): boolean => {
    assert.ok(isMeshError(e, ErrorCode.ARCHIVE_REFUSED), String(e));
    for (const name of names) assert.ok(e.message.includes(JSON.stringify(name)), e.message);
    return true;
  };

const escape = "/tmp/mesh-hostile-escape.txt";
const hostile: Array<[string, RawEntry]> = [
  ["a ../ entry", { name: "../../mesh-hostile-escape.txt", type: "0", data: "pwned" }],
  ["an absolute path", { name: escape, type: "0", data: "pwned" }],
  ["a symbolic link out", { name: "out", type: "2", linkname: "../../../../etc" }],
  ["an absolute symbolic link", { name: "abs", type: "2", linkname: "/etc" }],
  ["a hard link", { name: "hard", type: "1", linkname: "/etc/passwd" }],
  ["a character device", { name: "null", type: "3" }],
  ["a block device", { name: "disk", type: "4" }],
  ["a FIFO", { name: "pipe", type: "6" }],
  ["a set-user-id file", { name: "suid", type: "0", data: "x", mode: 0o4755 }],
  ["a contiguous file (type 7)", { name: "contig", type: "7", data: "x" }],
];

describe("hostile archives at registration", () => {
  for (const [what, entry] of hostile) {
    it(`${what} is refused with ARCHIVE_REFUSED naming the entry, and nothing is written outside`, async () => {
      await assert.rejects(register(rawTar([MANIFEST, entry])), refusedNaming(entry.name));
      await assert.rejects(readFile(escape));
    });
  }

  it("an archive with several bad entries names every one of them, not just the first", async () => {
    const bad = hostile.map(([, e]) => e);
    await assert.rejects(
      register(rawTar([MANIFEST, ...bad])),
      refusedNaming(...bad.map((e) => e.name)),
    );
  });

  it("a file written through a link of the archive's own is refused", async () => {
    const entries: RawEntry[] = [
      MANIFEST,
      { name: "d", type: "2", linkname: "." },
      { name: "d/x", type: "0", data: "x" },
    ];
    await assert.rejects(register(rawTar(entries)), refusedNaming("d/x"));
  });

  it("a symbolic link that stays inside is allowed (and left out of the source)", async () => {
    const read = await register(
      rawTar([
        MANIFEST,
        { name: "t.ts", type: "0", data: "x" },
        { name: "l", type: "2", linkname: "t.ts" },
      ]),
    );
    assert.equal((read as { manifest: { module: string } }).manifest.module, "evil");
  });

  it("an entry claiming more bytes than the limit is refused at its header", async () => {
    // The header claims 4 GiB; the data behind it is never looked at.
    const stream = rawTarStream([MANIFEST, { name: "zeros", type: "0", data: "x" }]);
    const header = stream.subarray(1024, 1536);
    header.write("37777777777\0", 124, 12, "latin1"); // 4 GiB - 1, octal
    header.fill(0x20, 148, 156);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "latin1");
    await assert.rejects(register(gzipSync(stream)), (e: unknown) => {
      assert.ok(isMeshError(e, ErrorCode.ARCHIVE_REFUSED));
      assert.match(e.message, /more than \d+ bytes/);
      return true;
    });
  });

  it("a 4 MB gzip bomb is refused in bounded time and memory, not expanded to gigabytes", async () => {
    // Concatenated gzip members of 1 MiB of zeros each: 4000 of them expand to 4 GiB.
    const member = gzipSync(Buffer.alloc(1024 * 1024), { level: 9 });
    // The manifest's header and data, and no end: the zeros that follow are read as the end
    // blocks, then as what comes after the end.
    const head = gzipSync(rawTarStream([MANIFEST]).subarray(0, 1024));
    const bomb = Buffer.concat([head, ...Array.from({ length: 4000 }, () => member)]);
    assert.ok(bomb.byteLength > 3_000_000 && bomb.byteLength < 6_000_000, `${bomb.byteLength}`);
    const before = process.memoryUsage().rss;
    const started = performance.now();
    await deadline(
      assert.rejects(register(bomb), (e: unknown) => {
        assert.ok(isMeshError(e, ErrorCode.ARCHIVE_REFUSED), String(e));
        return true;
      }),
      60_000,
      "the bomb's refusal",
    );
    const grew = process.memoryUsage().rss - before;
    console.log(
      `gzip bomb: ${bomb.byteLength} bytes refused in ${(performance.now() - started).toFixed(0)} ms, rss grew ${(grew / 1048576).toFixed(0)} MiB`,
    );
    assert.ok(grew < 512 * 1024 * 1024, `memory grew by ${grew} bytes`);
  });

  it("more entries than the limit are refused, counted while they are read", async () => {
    const many = Array.from({ length: 30 }, (_, i): RawEntry => ({
      name: `f${i}`,
      type: "0",
      data: "x",
    }));
    await assert.rejects(
      checkArchiveBytes(rawTar([MANIFEST, ...many]), {
        what: "the test archive",
        limits: { maxBytes: 1024 * 1024, maxEntries: 10 },
      }),
      (e: unknown) =>
        isMeshError(e, ErrorCode.ARCHIVE_REFUSED) && /more than 10 entries/.test(e.message),
    );
  });

  it("bytes that are not a gzip-compressed tar are refused, not an INTERNAL", async () => {
    for (const bytes of [Buffer.from("not an archive"), gzipSync(Buffer.from("x".repeat(2000)))]) {
      await assert.rejects(register(bytes), (e: unknown) =>
        isMeshError(e, ErrorCode.ARCHIVE_REFUSED),
      );
    }
  });
});

describe("FIFOs where a file is expected never block", () => {
  const fifo = async (path: string): Promise<void> => {
    await mkdir(join(path, ".."), { recursive: true });
    execFileSync("mkfifo", [path]);
  };

  it("an archive argument that is a FIFO is refused at once", async () => {
    const dir = await tempDir("fifo-arg");
    await fifo(join(dir, "m.tar.gz"));
    await assert.rejects(
      deadline(parseSourceArgument(join(dir, "m.tar.gz")), 10_000, "the FIFO's refusal"),
      (e: unknown) => isMeshError(e, ErrorCode.REFUSED) && /FIFO/.test(e.message),
    );
  });

  it("a registered archive replaced by a FIFO fails the builder's checkout at once", async () => {
    const dir = await tempDir("fifo-registered");
    await fifo(join(dir, "m.tar.gz"));
    await assert.rejects(
      deadline(
        materialise(
          { kind: "archive", url: join(dir, "m.tar.gz"), digest: "0".repeat(64) },
          join(dir, "out"),
          undefined,
        ),
        10_000,
        "materialise of a FIFO",
      ),
      (e: unknown) => isMeshError(e, ErrorCode.REFUSED),
    );
  });

  it("a mesh.yaml that is a FIFO is refused at registration at once", async () => {
    const dir = await tempDir("fifo-manifest");
    await fifo(join(dir, "mesh.yaml"));
    await assert.rejects(
      deadline(
        readSourceManifest(await parseSourceArgument(dir)),
        10_000,
        "the manifest's refusal",
      ),
      (e: unknown) =>
        isMeshError(e, ErrorCode.MANIFEST_INVALID) && /not a regular file/.test(e.message),
    );
  });

  it("a prebuilt source that is a FIFO in the module's folder fails the build at once", async () => {
    const dir = await tempDir("fifo-prebuilt");
    await writeFile(join(dir, "mesh.yaml"), prebuiltManifest("dist/app.tar.gz", "0".repeat(64)));
    await fifo(join(dir, "dist", "app.tar.gz"));
    const result = await deadline(buildSource(dir), 60_000, "the build with a FIFO source");
    assert.equal(result.ok, false);
  });
});

describe("a prebuilt bundle's source lies inside the module's folder", () => {
  it("a source outside (absolute, climbing, a file:// URL) fails the build and tells no digest of it", async () => {
    const outside = await tempDir("outside");
    const archive = packArchive([{ path: "bin/run.js", bytes: Buffer.from("1\n") }]);
    await writeFile(join(outside, "app.tar.gz"), archive);
    const secretDigest = createHash("sha256").update(archive).digest("hex");
    const passwd = createHash("sha256")
      .update(await readFile("/etc/passwd"))
      .digest("hex");
    const dir = await tempDir("module");
    for (const source of [
      "/etc/passwd",
      join(outside, "app.tar.gz"),
      `file://${join(outside, "app.tar.gz")}`,
      "../" + outside.split("/").pop() + "/app.tar.gz",
    ]) {
      await writeFile(join(dir, "mesh.yaml"), prebuiltManifest(source, "0".repeat(64)));
      const result = await buildSource(dir);
      assert.equal(result.ok, false, source);
      assert.match(result.log, /prebuilt-source-inside/, result.log);
      assert.ok(!result.log.includes(secretDigest) && !result.log.includes(passwd), result.log);
    }
  });

  it("a source inside is taken, and a wrong digest still names the module's own file only", async () => {
    const dir = await tempDir("inside");
    const archive = packArchive([{ path: "bin/run.js", bytes: Buffer.from("1\n") }]);
    await mkdir(join(dir, "dist"));
    await writeFile(join(dir, "dist", "app.tar.gz"), archive);
    const digest = createHash("sha256").update(archive).digest("hex");
    await writeFile(join(dir, "mesh.yaml"), prebuiltManifest("dist/app.tar.gz", digest));
    const good = await buildSource(dir);
    assert.ok(good.ok, good.log);
  });

  it("a prebuilt archive with a device entry fails the build naming the entry", async () => {
    const dir = await tempDir("prebuilt-device");
    const archive = rawTar([
      { name: "bin/run.js", type: "0", data: "1" },
      { name: "bin/null", type: "3" },
    ]);
    await mkdir(join(dir, "dist"));
    await writeFile(join(dir, "dist", "app.tar.gz"), archive);
    const digest = createHash("sha256").update(archive).digest("hex");
    await writeFile(join(dir, "mesh.yaml"), prebuiltManifest("dist/app.tar.gz", digest));
    const result = await buildSource(dir);
    assert.equal(result.ok, false);
    assert.match(result.log, /"bin\/null" is a device node/);
  });
});
