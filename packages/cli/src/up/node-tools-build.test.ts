/**
 * The shipped runtime module, built as the builder builds it and unpacked outside the repository,
 * starts without the repository's `node_modules`: a bundle that reaches a package's file by path
 * (`require.resolve`) works in the checkout and fails on every node.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { buildSource, unpackArchive } from "@mesh/delivery";
import { deadline } from "@mesh/bus/testing";
import { NODE_TOOLS_SOURCE } from "./modules.js";

let scratch: string | undefined;
after(async () => {
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe("the node-tools build", () => {
  test("loads from an unpacked archive with no node_modules in reach", async () => {
    const built = await buildSource(NODE_TOOLS_SOURCE);
    assert.ok(built.ok, built.ok ? "" : built.log);
    const archive = built.archives.find((a) => a.bundle === "runtime");
    assert.ok(archive, "a runtime bundle");
    scratch = await mkdtemp(join(tmpdir(), "mesh-node-tools-"));
    await unpackArchive(archive.bytes, scratch);
    // No MESH_* settings: the runtime loads every module it imports, then refuses to start
    // through the kit's process shell (a usage error: exit 2, said once with its code).
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("MESH_") && k !== "NODE_PATH"),
    );
    const child = spawn(process.execPath, [join(scratch, "src", "main.js")], {
      cwd: scratch,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    const code = await deadline(
      new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c))),
      60_000,
      "the unpacked runtime to exit",
    ).finally(() => child.kill("SIGKILL"));
    assert.doesNotMatch(stderr, /Cannot find module|MODULE_NOT_FOUND|ERR_MODULE_NOT_FOUND/);
    assert.match(stderr, /^\[node-tools\] failed: .*\[USAGE\]$/m);
    assert.equal(code, 2);
  });
});
