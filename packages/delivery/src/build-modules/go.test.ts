/**
 * The go build module's work (decision 0162): the example built twice, from copies in different
 * folders, gives the same static binary and digest; the binary is packed executable and is what
 * its process runs; a compile error fails the build with the compiler's words.
 */
import assert from "node:assert/strict";
import { cp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { describe, it } from "node:test";
import { buildSource } from "../build-source.js";
import { archiveEntries } from "./test-archive.js";
import { tempFolder } from "../test-support.js";

const EXAMPLE = fileURLToPath(new URL("../../../../examples/modules/hello-go", import.meta.url));

describe("the go build module", { timeout: 1_200_000 }, () => {
  it("builds the example twice, from copies in different folders, to the same static binary", async () => {
    const copy = await tempFolder("hello-go-copy");
    await cp(EXAMPLE, copy, { recursive: true });
    const first = await buildSource(EXAMPLE);
    const second = await buildSource(copy);
    assert.ok(first.ok && second.ok, first.ok ? (second.ok ? "" : second.log) : first.log);
    assert.equal(first.archives[0]?.digest, second.archives[0]?.digest);
    assert.equal(first.manifestDigest, second.manifestDigest);
    const files = archiveEntries(first.archives[0]?.bytes ?? new Uint8Array());
    assert.equal(files.get("bin/app"), 0o755);
    assert.deepEqual(first.manifest.processes[0]?.run, ["bin/app"]);
    // Static: an ELF with no interpreter (no PT_INTERP program header) is what CGO_ENABLED=0 gives.
    const tar = gunzipSync(first.archives[0]?.bytes ?? new Uint8Array());
    const elf = tar.indexOf(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
    assert.ok(elf > 0, "the archive holds an ELF binary");
    assert.equal(tar.includes(Buffer.from("/lib64/ld-linux")), false, "no dynamic loader named");
  });

  it("a compile error fails the build with the compiler's words", async () => {
    const copy = await tempFolder("hello-go-broken");
    await cp(EXAMPLE, copy, { recursive: true });
    await writeFile(join(copy, "greeting.go"), "package main\n\nfunc greetText( {\n");
    const result = await buildSource(copy);
    assert.equal(result.ok, false);
    assert.match(result.ok ? "" : result.error, /go build of bundle app failed: .*greeting\.go/);
  });
});
