import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Bucket, Stream, ObjectStore, ErrorCode } from "@mesh/protocol";
import { KvBucket, MeshBus, readCredential } from "@mesh/bus";
import { deadline, freePort } from "@mesh/bus/testing";
import { isAlive } from "../../mesh-root.js";
import { nodeFromHostname } from "./up.js";

const MAIN = fileURLToPath(new URL("../../main.js", import.meta.url));
const LAYOUT_SIZE =
  Object.keys(Bucket).length + Object.keys(Stream).length + Object.keys(ObjectStore).length;

const roots: string[] = [];
after(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

async function newRoot(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "mesh-up-"));
  roots.push(root);
  return root;
}

interface Running {
  readonly child: ChildProcess;
  readonly report: Promise<Record<string, unknown>>;
  readonly exit: Promise<number | null>;
}

/** Starts `mesh up --json` and resolves its report once the mesh is up. */
function startUp(args: readonly string[]): Running {
  const child = spawn(process.execPath, [MAIN, "up", "--json", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const report = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      try {
        resolve(JSON.parse(out) as Record<string, unknown>);
      } catch {
        // not the whole document yet
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
    void exit.then((code) =>
      reject(new Error(`mesh up exited (${String(code)}) before it was up: ${out}${err}`)),
    );
  });
  return { child, report, exit };
}

/** `mesh up` of the bus alone on `port`, exiting once it is ready. */
const startBusOnce = (root: string, port: number, ...more: string[]) =>
  startUp(["--root", root, "--port", String(port), ...more, "--exit-when-ready", "--bus-only"]);

test("mesh up brings up the bus with the layout; the operator can read it; Ctrl-C leaves no process", async () => {
  const root = await newRoot();
  const port = await freePort();
  const up = startUp(["--root", root, "--port", String(port), "--node", "dev-1", "--bus-only"]);
  try {
    const report = await deadline(up.report, 60_000, "mesh up to be ready");
    assert.equal(report["ok"], true);
    assert.equal(report["node"], "dev-1");
    const bus = report["bus"] as { url: string; pid: number };
    const layout = report["layout"] as { created: string[]; found: string[] };
    assert.equal(bus.url, `nats://127.0.0.1:${port}`);
    assert.equal(layout.created.length, LAYOUT_SIZE);
    const operatorPath = (report["credentials"] as { operator: string }).operator;
    assert.equal((await stat(operatorPath)).mode & 0o777, 0o600);
    // A new root runs the mesh's accounts: signed credentials, no users list (decision 0080).
    assert.equal((report["bus"] as { auth: string }).auth, "accounts");
    const signed = await readCredential(operatorPath);
    assert.ok(signed.jwt !== undefined && signed.password === undefined);

    const operator = await MeshBus.connectWithFile(operatorPath);
    try {
      const modules = await KvBucket.open(operator, Bucket.modules);
      assert.deepEqual(await modules.keys(), []);
      const wants = await KvBucket.open(operator, Bucket.wants);
      assert.deepEqual(await wants.keys(), []);
    } finally {
      await operator.close();
    }

    up.child.kill("SIGINT");
    assert.equal(await deadline(up.exit, 30_000, "mesh up to stop"), 0);
    assert.ok(!isAlive(bus.pid), `nats-server ${bus.pid} is still running after Ctrl-C`);
    await assert.rejects(stat(join(root, "up.pid")), { code: "ENOENT" });
  } finally {
    up.child.kill("SIGKILL");
  }
});

test("a second mesh up on the same root finds its layout and data; a concurrent one is refused", async () => {
  const root = await newRoot();
  const port = await freePort();
  const first = startBusOnce(root, port);
  const firstReport = await deadline(first.report, 60_000, "first mesh up");
  assert.equal(await deadline(first.exit, 30_000, "first mesh up to exit"), 0);
  const firstBus = firstReport["bus"] as { pid: number };
  assert.ok(!isAlive(firstBus.pid));

  const second = startUp(["--root", root]);
  try {
    const report = await deadline(second.report, 60_000, "second mesh up");
    const layout = report["layout"] as { created: string[]; found: string[] };
    assert.deepEqual(layout.created, []);
    assert.equal(layout.found.length, LAYOUT_SIZE);
    // The port is remembered, so the credentials written the first time still reach the bus.
    assert.equal((report["bus"] as { url: string }).url, `nats://127.0.0.1:${port}`);

    const third = startUp(["--root", root, "--bus-only"]);
    const refusal = (await deadline(third.report, 30_000, "the refusal")) as {
      ok: boolean;
      error: { code: string };
    };
    assert.equal(refusal.ok, false);
    assert.equal(refusal.error.code, ErrorCode.ROOT_IN_USE);
    assert.equal(await third.exit, 3);

    second.child.kill("SIGTERM");
    assert.equal(await deadline(second.exit, 30_000, "second mesh up to stop"), 0);
  } finally {
    second.child.kill("SIGKILL");
  }
});

test("--auth users runs a users list, and a root keeps the mode it began with", async () => {
  const root = await newRoot();
  const port = await freePort();
  const first = startBusOnce(root, port, "--auth", "users");
  const report = await deadline(first.report, 60_000, "mesh up --auth users");
  assert.equal(await deadline(first.exit, 30_000, "mesh up to exit"), 0);
  const bus = report["bus"] as { auth: string; config: string };
  assert.equal(bus.auth, "users");
  const config = await readFile(bus.config, "utf8");
  assert.match(config, /authorization \{/);
  assert.doesNotMatch(config, /operator:/);
  const operatorPath = (report["credentials"] as { operator: string }).operator;
  assert.ok((await readCredential(operatorPath)).password !== undefined);

  const again = startUp(["--root", root, "--auth", "accounts", "--bus-only"]);
  const refusal = (await deadline(again.report, 30_000, "the refusal")) as {
    ok: boolean;
    error: { code: string; message: string };
  };
  assert.equal(refusal.ok, false);
  assert.equal(refusal.error.code, ErrorCode.USAGE);
  assert.match(refusal.error.message, /--auth users/);
  await again.exit;
});

test("a refusal under --json is one JSON document with the code", async () => {
  const root = await newRoot();
  const child = spawn(
    process.execPath,
    [MAIN, "up", "--json", "--root", root, "--node", "Bad Name"],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  assert.equal(code, 2);
  const parsed = JSON.parse(out) as { ok: boolean; error: { code: string } };
  assert.equal(parsed.ok, false);
  assert.equal(parsed.error.code, ErrorCode.INVALID_NAME);
});

test("node names come from the hostname, made valid", () => {
  assert.equal(nodeFromHostname("Build-Box.example.com"), "build-box");
  assert.equal(nodeFromHostname("42_host"), "host");
  assert.equal(nodeFromHostname("___"), "node-1");
});
