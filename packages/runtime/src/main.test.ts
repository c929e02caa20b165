/**
 * The runtime as the host runs it: a child process started with MESH_TOOL_MODULES (two entries
 * for one module, and a module that cannot load), MESH_BROKER_FILE and MESH_RUNTIME_STATUS,
 * speaking on the bus with exactly runtimeGrant, and stopped by SIGTERM; and one that cannot
 * start, which exits through the kit's process shell saying its failure once.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { request, writeCredential } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import { Env, toolSubject } from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import type { RuntimeStatus } from "./runtime.js";
import { StatusEnv } from "./env.js";
import { HOST_USER, startHostClient, type HostClient } from "./test-support/host-client.js";
import { ALPHA_MORE, ALPHA_TOOLS, DELTA, writeModule } from "./test-support/modules.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { statusUntil } from "./test-support/status-file.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));
const WAIT = 20_000;

describe("the runtime's process", () => {
  let bus: TestBus;
  let dir: string;
  let provisioner: HostClient;
  let child: ChildProcess | undefined;
  let exited: Promise<number | null>;
  const statusFile = () => join(dir, "status.json");

  before(async () => {
    bus = await startTestBus({
      modules: [served("alpha"), served("delta")],
      users: [{ ...HOST_USER, permissions: hostGrant({ node: NODE }) }],
    });
    provisioner = await startHostClient({
      bus,
      node: NODE,
      modules: { alpha: { config: { greeting: { default: "Hello" } }, bound: {} } },
    });
    dir = await mkdtemp(join(tmpdir(), "mesh-runtime-main-"));
    const [tools, more] = await writeModule(dir, "alpha", {
      "tools.mjs": ALPHA_TOOLS,
      "more.mjs": ALPHA_MORE,
    });
    const [broken] = await writeModule(dir, "delta", { "tools.mjs": DELTA });
    const credential = join(dir, "broker.json");
    await writeCredential(credential, bus.runtimeCredential);
    child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        [Env.toolModules]: [`alpha=${tools}`, `alpha=${more}`, `delta=${broken}`].sort().join(","),
        [Env.brokerFile]: credential,
        [StatusEnv]: statusFile(),
        MESH_RUNTIME_INITIAL_BACKOFF_MS: "100",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    exited = new Promise((resolve) => child?.once("exit", (code) => resolve(code)));
    void exited.then((code) => {
      if (code !== 0) process.stderr.write(`runtime exited ${code}:\n${stderr}\n`);
    });
  });

  after(async () => {
    if (child?.pid !== undefined && child.exitCode === null) process.kill(child.pid, "SIGKILL");
    await provisioner?.stop();
    await bus?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test("reports each module's load: serving with its tools, or failing with the reason", async () => {
    const status = await deadline(
      statusUntil(
        statusFile(),
        (s) =>
          s.modules["alpha"]?.state === ModuleState.serving &&
          s.modules["delta"]?.state === ModuleState.failing &&
          (s.modules["delta"]?.restarts ?? 0) >= 1,
      ),
      WAIT,
      "the status file saying alpha serves and delta fails after a restart",
    );
    assert.equal(status.node, NODE);
    assert.equal(status.pid, child?.pid);
    assert.ok(status.modules["alpha"]?.tools.includes("greet"));
    assert.ok(status.modules["alpha"]?.tools.includes("seen"), "both entries of alpha are loaded");
    assert.match(status.modules["delta"]?.error ?? "", /its database is missing/);
  });

  test("serves the loaded module's tools while another fails", async () => {
    assert.deepEqual(
      await request(bus.admin, toolSubject(NODE, "alpha", "greet"), { name: "Ada" }),
      { text: "Hello, Ada" },
    );
  });

  test("stops on SIGTERM, reporting every module stopped", async () => {
    assert.ok(child?.pid !== undefined);
    process.kill(child.pid, "SIGTERM");
    assert.equal(await deadline(exited, WAIT, "the runtime exiting"), 0);
    const status = JSON.parse(await readFile(statusFile(), "utf8")) as RuntimeStatus;
    assert.equal(status.state, "stopped");
    assert.ok(Object.values(status.modules).every((m) => m.state === ModuleState.stopped));
  });
});

describe("a runtime that cannot start", () => {
  /** The runtime run with only these of the mesh's variables; its exit code and failure lines. */
  const run = (
    env: Record<string, string>,
  ): { status: number | null; failures: string[]; stderr: string } => {
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("MESH_")),
    );
    const child = spawnSync(process.execPath, [MAIN], {
      env: { ...clean, ...env },
      encoding: "utf8",
      timeout: 60_000,
    });
    const failures = child.stderr.split("\n").filter((l) => l.startsWith("[node-tools] failed: "));
    return { status: child.status, failures, stderr: child.stderr };
  };

  test("exits 1 through the kit's shell, saying its failure once with its code", () => {
    const missing = join(tmpdir(), `mesh-runtime-no-such-${process.pid}.json`);
    const { status, failures, stderr } = run({ [Env.brokerFile]: missing, [Env.toolModules]: "" });
    assert.equal(status, 1, stderr);
    assert.equal(failures.length, 1, stderr);
    assert.match(failures[0] ?? "", /mesh-runtime-no-such-.*\[CREDENTIAL_INVALID\]$/);
  });

  test("without its credential's variable, exits 2 (USAGE) saying which variable, once", () => {
    const { status, failures, stderr } = run({});
    assert.equal(status, 2, stderr);
    assert.equal(failures.length, 1, stderr);
    assert.match(failures[0] ?? "", new RegExp(`${Env.brokerFile} is not set.*\\[USAGE\\]$`));
  });
});
