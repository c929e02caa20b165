import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus, ensureLayout, writeCredential } from "@mesh/bus";
import { deadline, startTestServer, type TestServer } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import { Bucket, Principal, type Credential } from "@mesh/protocol";
import { hostOptionsOf, machineArgs } from "./host.js";

const MAIN = fileURLToPath(new URL("../../main.js", import.meta.url));
const PASSWORD = "cli-host-test-password";
let server: TestServer;
let dir: string;

before(async () => {
  server = await startTestServer({
    users: [{ user: "host-c1", password: PASSWORD, permissions: hostGrant({ node: "c1" }) }],
  });
  dir = await mkdtemp(join(tmpdir(), "mesh-cli-host-"));
});
after(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

const as = (user: string, password: string, module: string): Credential => ({
  servers: [server.url],
  user,
  password,
  node: "c1",
  module,
});

test("mesh host runs the node's host with its own credential and stops cleanly on SIGTERM", async () => {
  await using admin = await MeshBus.connect(
    as(server.admin.user, server.admin.password, Principal.controller),
  );
  await ensureLayout(admin);
  const credential = join(dir, "host.credential.json");
  await writeCredential(credential, as("host-c1", PASSWORD, Principal.host));
  const child = spawn(
    process.execPath,
    [MAIN, "host", "--node", "c1", "--root", join(dir, "root"), "--credential", credential],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  child.stderr?.resume();
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  try {
    const presence = await KvBucket.open(admin, Bucket.presence);
    await deadline(
      (async () => {
        while ((await presence.get("c1")) === undefined)
          await new Promise((r) => setTimeout(r, 100));
      })(),
      30_000,
      "the host's presence",
    );
    child.kill("SIGTERM");
    assert.equal(await deadline(exit, 30_000, "the host stopping"), 0);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
});

test("mesh host that cannot start exits 1 through the kit's shell, saying the failure once with its code", () => {
  const missing = join(dir, "no-such.credential.json");
  const run = spawnSync(
    process.execPath,
    [MAIN, "host", "--node", "c1", "--root", join(dir, "root-missing"), "--credential", missing],
    { encoding: "utf8", timeout: 60_000 },
  );
  assert.equal(run.status, 1, run.stderr);
  const failures = run.stderr.split("\n").filter((line) => line.startsWith("mesh-host: failed: "));
  assert.equal(failures.length, 1, run.stderr);
  assert.match(failures[0] ?? "", /no-such\.credential\.json.*\[[A-Z_]+\]$/);
});

test("--tools-idle: the node's idle time for tools modules, in seconds, reaches the host (and mesh up's host)", () => {
  const cli = { node: "c1", root: "/r", credential: "/c", toolsIdle: 90 };
  assert.equal(hostOptionsOf(cli).runtimeIdleMs, 90_000);
  assert.equal(hostOptionsOf({ ...cli, toolsIdle: 0 }).runtimeIdleMs, 0, "0: never idle");
  assert.equal(
    "runtimeIdleMs" in hostOptionsOf({ node: "c1", root: "/r", credential: "/c" }),
    false,
  );
  assert.deepEqual(machineArgs({ toolsIdle: 90 }), ["--tools-idle", "90"]);
});

test("--tools-idle that is not whole seconds is refused, naming the flag and the fix", () => {
  for (const bad of ["-5", "1.5", "ten"]) {
    const run = spawnSync(
      process.execPath,
      [MAIN, "host", "--node", "c1", "--root", dir, "--credential", "x", `--tools-idle=${bad}`],
      { encoding: "utf8" },
    );
    assert.equal(run.status, 2, `${bad}: ${run.stderr}`);
    assert.match(run.stderr, /--tools-idle .* is not a whole number of seconds.*--tools-idle 300/);
  }
});

test("--heartbeat-ms: how often the host says it is present reaches the host (and mesh up's and mesh join's host)", () => {
  const cli = { node: "c1", root: "/r", credential: "/c", heartbeatMs: 2_000 };
  assert.equal(hostOptionsOf(cli).heartbeatMs, 2_000);
  assert.equal("heartbeatMs" in hostOptionsOf({ node: "c1", root: "/r", credential: "/c" }), false);
  assert.deepEqual(machineArgs({ heartbeatMs: 2_000 }), ["--heartbeat-ms", "2000"]);
  for (const verb of ["host", "join", "up"]) {
    const run = spawnSync(process.execPath, [MAIN, verb, "--help"], { encoding: "utf8" });
    assert.match(run.stdout, /--heartbeat-ms <ms>/, `mesh ${verb} takes it`);
  }
});

test("--heartbeat-ms that is not a whole number above 0 is refused, naming the flag", () => {
  for (const bad of ["0", "-5", "1.5", "often"]) {
    const run = spawnSync(
      process.execPath,
      [MAIN, "host", "--node", "c1", "--root", dir, "--credential", "x", `--heartbeat-ms=${bad}`],
      { encoding: "utf8" },
    );
    assert.equal(run.status, 2, `${bad}: ${run.stderr}`);
    assert.match(run.stderr, /--heartbeat-ms/);
  }
});
