/**
 * A standby runtime process as the host boots one: started with MESH_RUNTIME_STANDBY=1 and an IPC
 * channel, it says it is ready, serves nothing, and when told to serve takes the environment it
 * is handed (its modules, its status file, a credential with a wider grant: connected again with
 * it; module code sees the new environment, without the runtime's wiring); a standby whose host
 * goes away (its channel closes) ends, and so does one stopped by SIGTERM before it serves.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { request, writeCredential } from "@mesh/bus";
import { credentialFor, deadline } from "@mesh/bus/testing";
import { hostGrant, runtimeGrant } from "@mesh/core";
import { Env, RUNTIME_MODULE, toolSubject } from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import { StandbyEnv, StatusEnv } from "./env.js";
import { HOST_USER, startHostClient, type HostClient } from "./test-support/host-client.js";
import { ALPHA_TOOLS, writeModule } from "./test-support/modules.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { statusUntil } from "./test-support/status-file.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));
const WAIT = 30_000;
/** alpha's second entry: a tool that says what of the environment module code sees. */
const ENV_TOOL = `
import { defineModule, defineTool, z } from "@SDK@";
const WIRING = ["${Env.brokerFile}", "${Env.toolModules}", "${StatusEnv}", "${StandbyEnv}", "${Env.toolIdle}"];
export default defineModule({
  tools: [
    defineTool({
      name: "env",
      description: "Says MESH_TEST_SEEN and which of the runtime's own variables it sees.",
      input: z.object({}),
      handler: async () => ({
        seen: process.env.MESH_TEST_SEEN ?? null,
        hidden: WIRING.filter((name) => process.env[name] !== undefined),
      }),
    }),
  ],
});
`;

/** A runtime user granted no module: what the runtime held before alpha was assigned. */
const BEFORE = { user: "runtime-before", password: "runtime-before-password-for-tests" };

describe("a standby runtime", () => {
  let bus: TestBus;
  let dir: string;
  let provisioner: HostClient;
  const children: ChildProcess[] = [];

  before(async () => {
    bus = await startTestBus({
      modules: [served("alpha")],
      users: [
        { ...HOST_USER, permissions: hostGrant({ node: NODE }) },
        {
          ...BEFORE,
          permissions: runtimeGrant({ node: NODE, modules: [], owners: {} }).permissions,
        },
      ],
    });
    provisioner = await startHostClient({
      bus,
      node: NODE,
      modules: { alpha: { config: { greeting: { default: "Hello" } }, bound: {} } },
    });
    dir = await mkdtemp(join(tmpdir(), "mesh-runtime-standby-"));
  });

  after(async () => {
    for (const child of children)
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, "SIGKILL");
    await provisioner?.stop();
    await bus?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** Starts a standby with the credential granted nothing; resolves once it says it is ready. */
  async function startStandby(): Promise<{ child: ChildProcess; exited: Promise<number | null> }> {
    const { child, exited, ready } = await spawnStandby();
    await deadline(ready, WAIT, "the standby saying it is ready");
    return { child, exited };
  }

  /** Starts a standby with the credential granted nothing, without waiting for it. */
  async function spawnStandby(): Promise<{
    child: ChildProcess;
    exited: Promise<number | null>;
    ready: Promise<void>;
  }> {
    const credential = join(dir, "broker-before.json");
    await writeCredential(
      credential,
      credentialFor(bus.server, BEFORE, { node: NODE, module: RUNTIME_MODULE }),
    );
    const child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        [Env.toolModules]: "",
        [Env.brokerFile]: credential,
        [StandbyEnv]: "1",
        MESH_TEST_SEEN: "as booted",
      },
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    children.push(child);
    const exited = new Promise<number | null>((resolve) =>
      child.once("exit", (code) => resolve(code)),
    );
    const ready = new Promise<void>((resolve) =>
      child.on("message", (m: { t?: string }) => {
        if (m?.t === "standby-ready") resolve();
      }),
    );
    return { child, exited, ready };
  }

  test("told to serve with a new environment, it serves its modules as the new credential", async () => {
    const { child, exited } = await startStandby();
    const subject = toolSubject(NODE, "alpha", "greet");
    await assert.rejects(request(bus.admin, subject, { name: "Ada" }, { timeoutMs: 1_000 }));
    const [tools, env] = await writeModule(dir, "alpha", {
      "tools.mjs": ALPHA_TOOLS,
      "env.mjs": ENV_TOOL,
    });
    const credential = join(dir, "broker.json");
    await writeCredential(credential, bus.runtimeCredential);
    const statusFile = join(dir, "node-tools.{pid}.status.json");
    const closed = new Promise<void>((resolve) => child.once("disconnect", resolve));
    child.send({
      t: "serve",
      env: {
        set: {
          [Env.toolModules]: `alpha=${env},alpha=${tools}`,
          [Env.brokerFile]: credential,
          [StatusEnv]: statusFile,
          [Env.toolIdle]: "alpha=600000",
          MESH_TEST_SEEN: "handed over",
        },
        unset: [StandbyEnv],
      },
    });
    const status = await deadline(
      statusUntil(
        statusFile.replace("{pid}", String(child.pid)),
        (s) => s.modules["alpha"]?.state === ModuleState.serving,
      ),
      WAIT,
      "alpha served by the standby that took over",
    );
    assert.ok(status.started.takeover !== undefined, "the status says when it took over");
    assert.ok(status.started.process <= status.started.takeover);
    assert.deepEqual(await request(bus.admin, subject, { name: "Ada" }), { text: "Hello, Ada" });
    // Module code sees the environment handed over (its spare booted again for it), without
    // the runtime's wiring.
    assert.deepEqual(await request(bus.admin, toolSubject(NODE, "alpha", "env"), {}), {
      seen: "handed over",
      hidden: [],
    });
    await deadline(closed, WAIT, "the standby closing its channel to the host");
    assert.ok(child.pid !== undefined);
    process.kill(child.pid, "SIGTERM");
    assert.equal(await deadline(exited, WAIT, "the runtime exiting"), 0);
  });

  test("a standby whose host goes away (its channel closes) ends", async () => {
    const { child, exited } = await startStandby();
    child.disconnect();
    assert.equal(await deadline(exited, WAIT, "the standby ending"), 0);
  });

  test("a standby whose host goes away before it is ready ends cleanly, on no unhandled error", async () => {
    const { child, exited } = await spawnStandby();
    let said = "";
    child.stderr?.on("data", (chunk: Buffer) => (said += chunk.toString()));
    child.disconnect();
    assert.equal(await deadline(exited, WAIT, "the standby ending"), 0, said);
    assert.doesNotMatch(said, /ERR_IPC_CHANNEL_CLOSED|Unhandled/);
  });

  test("a standby stopped by SIGTERM before it serves ends cleanly, saying it leaves", async () => {
    const { child, exited } = await startStandby();
    let said = "";
    child.stderr?.on("data", (chunk: Buffer) => (said += chunk.toString()));
    assert.ok(child.pid !== undefined);
    process.kill(child.pid, "SIGTERM");
    assert.equal(await deadline(exited, WAIT, "the standby ending"), 0);
    assert.match(said, /SIGTERM: leaving/);
  });
});
