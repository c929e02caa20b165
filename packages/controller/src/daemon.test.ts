/**
 * The controller as its own process beside a bus it did not start (as with `mesh up`): it reloads
 * the bus's users through the server's folder, composes, and stops cleanly on SIGTERM.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { Bucket, type Composed } from "@mesh/protocol";
import { writeCredential } from "@mesh/bus";
import { credentialFor, deadline } from "@mesh/bus/testing";
import { hello, newKeys, nodeTools, presenceOf, startMesh, type Mesh } from "./test-support.js";

const main = fileURLToPath(new URL("./main.js", import.meta.url));

describe("mesh-controller, the process", () => {
  let mesh: Mesh;
  before(async () => {
    mesh = await startMesh();
  });
  after(() => mesh[Symbol.asyncDispose]());

  it("composes from its own process and stops on SIGTERM with code 0", async () => {
    const root = join(mesh.dir, "root");
    await mkdir(join(root, "credentials"), { recursive: true });
    await writeCredential(
      join(root, "credentials", "controller.json"),
      credentialFor(mesh.server, mesh.server.admin, { node: "hub", module: "controller" }),
    );
    await writeFile(
      join(root, "users.json"),
      JSON.stringify({ users: [{ ...mesh.adminUser, principal: "controller" }] }),
      { mode: 0o600 },
    );
    const keys = newKeys();
    await mesh.put(Bucket.presence, "p1", presenceOf("p1", keys));
    await mesh.want("p1", hello);
    await mesh.want("p1", nodeTools);

    const child = spawn(process.execPath, [main, "--root", root, "--bus-dir", mesh.server.dir], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => resolve(code)),
    );
    let stderr = "";
    child.stderr.setEncoding("utf8");
    const running = new Promise<void>((resolve) => {
      child.stderr.on("data", (chunk: string) => {
        stderr += chunk;
        if (stderr.includes("controller: running")) resolve();
      });
    });
    try {
      await deadline(running, 20_000, "the controller process saying it runs");
      const composed = await mesh.composed(
        "p1",
        (c: Composed) =>
          c.resources.some(
            (r) => r.id === "node-tools.need-broker" && r.type === "need" && r.sealed !== undefined,
          ),
        "p1 composed by the controller process",
      );
      assert.ok(composed.value.resources.some((r) => r.id === "hello.bundle-tools"));
    } finally {
      child.kill("SIGTERM");
    }
    assert.equal(await deadline(exited, 15_000, "the controller process exiting"), 0, stderr);
  });

  it("that cannot start exits 1 through the kit's shell, saying the failure once with its code", async () => {
    // A root with no credential in it: the controller cannot log in.
    const root = join(mesh.dir, "empty-root");
    await mkdir(root, { recursive: true });
    const child = spawn(process.execPath, [main, "--root", root, "--bus-dir", mesh.server.dir], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => resolve(code)),
    );
    try {
      assert.equal(await deadline(exited, 15_000, "the controller process exiting"), 1, stderr);
    } finally {
      child.kill("SIGKILL");
    }
    const failures = stderr.split("\n").filter((line) => line.startsWith("controller: failed: "));
    assert.equal(failures.length, 1, stderr);
    assert.match(failures[0] ?? "", /controller\.json.*\[[A-Z_]+\]$/);
  });
});
