/**
 * `mesh view` as an operator runs it: the CLI as a child process with the operator's credential
 * under `--root`, serving the page until Ctrl-C, and refusing to listen beyond loopback unasked.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { deadline } from "@mesh/bus/testing";
import { Env, ErrorCode } from "@mesh/protocol";
import { operatorBusSuite } from "../../testing/operator-bus.js";

const MAIN = fileURLToPath(new URL("../../main.js", import.meta.url));
const NODE = "n1";
const WAIT_MS = 10_000;

type Child = ChildProcessByStdio<null, Readable, Readable>;

function start(args: readonly string[]): Child {
  return spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, [Env.credential]: "", MESH_VIEW_TOKEN: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function exited(child: Child): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The first line the child prints on stdout. */
function firstLine(child: Child): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      const end = text.indexOf("\n");
      if (end >= 0) {
        child.stdout.off("data", onData);
        resolve(text.slice(0, end));
      }
    };
    child.stdout.on("data", onData);
    child.once("exit", (code) =>
      reject(new Error(`mesh view exited (${String(code)}) before printing`)),
    );
  });
}

describe("mesh view", () => {
  const bus = operatorBusSuite({ name: "view", node: NODE }, { before, after });

  test("serves the page with the operator's credential from --root until Ctrl-C", async () => {
    const child = start(["view", "--root", bus.root]);
    const done = exited(child);
    try {
      const line = await deadline(firstLine(child), WAIT_MS, "mesh view to print its URL");
      const url = /^The view is at (http:\/\/127\.0\.0\.1:\d+\/)$/.exec(line)?.[1];
      assert.ok(url !== undefined, line);
      const state = await fetch(`${url}api/state`);
      assert.equal(state.status, 200);
      assert.ok(((await state.json()) as { entries?: unknown }).entries !== undefined);
    } finally {
      child.kill("SIGINT");
    }
    const { code } = await deadline(done, WAIT_MS, "mesh view to stop on SIGINT");
    assert.equal(code, 0);
  });

  test("refuses --host beyond loopback without --expose, with VIEW_UNPROTECTED and a usage exit", async () => {
    const { code, stdout } = await deadline(
      exited(start(["view", "--root", bus.root, "--host", "0.0.0.0", "--json"])),
      WAIT_MS,
      "mesh view to refuse",
    );
    assert.equal(code, 2);
    assert.equal(
      (JSON.parse(stdout) as { error: { code: string } }).error.code,
      ErrorCode.VIEW_UNPROTECTED,
    );
  });

  test("with --expose and no token, makes one up and puts it in the URL", async () => {
    const { code, stdout } = await deadline(
      exited(
        start([
          "view",
          "--root",
          bus.root,
          "--host",
          "0.0.0.0",
          "--expose",
          "--exit-when-ready",
          "--json",
        ]),
      ),
      WAIT_MS,
      "mesh view to start and stop",
    );
    assert.equal(code, 0);
    assert.match((JSON.parse(stdout) as { url: string }).url, /\?token=[A-Za-z0-9_-]{24,}$/);
  });
});
