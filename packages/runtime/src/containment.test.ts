/**
 * Containment, in the runtime's own process as the host runs it: a module that holds Buffers
 * without bound, and one that signals the runtime's process, its group or its host, are stopped
 * and reported failing, while another module keeps answering every call and the process lives on.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { request, writeCredential } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { Env, ErrorCode, isMeshError, toolSubject } from "@mesh/protocol";
import { ModuleState } from "./module-worker.js";
import { StatusEnv } from "./env.js";
import { HOARDER, KILLER, STEADY, writeModule } from "./test-support/modules.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { readStatus, statusUntil } from "./test-support/status-file.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));
const WAIT = 30_000;
const LIMIT_MB = 64;

describe("containment: a module cannot take the runtime down with it", () => {
  let bus: TestBus;
  let dir: string;
  let child: ChildProcess | undefined;
  let stderr = "";
  const statusFile = () => join(dir, "status.json");
  /** A caller that keeps calling steady for as long as the tests run. */
  const steady = { calls: 0, failed: [] as string[], stop: false, done: Promise.resolve() };

  const call = (module: string, tool: string, input: unknown) =>
    request(bus.admin, toolSubject(NODE, module, tool), input, { timeoutMs: 10_000 });

  const rssMb = async (pid: number): Promise<number> => {
    const text = await readFile(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(text)?.[1] ?? 0) / 1024;
  };

  before(async () => {
    bus = await startTestBus({ modules: [served("steady"), served("hoarder"), served("killer")] });
    dir = await mkdtemp(join(tmpdir(), "mesh-runtime-containment-"));
    const entries = [
      `steady=${(await writeModule(dir, "steady", { "tools.mjs": STEADY }))[0]}`,
      `hoarder=${(await writeModule(dir, "hoarder", { "tools.mjs": HOARDER }))[0]}`,
      `killer=${(await writeModule(dir, "killer", { "tools.mjs": KILLER }))[0]}`,
    ];
    const credential = join(dir, "broker.json");
    await writeCredential(credential, bus.runtimeCredential);
    child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        [Env.toolModules]: entries.sort().join(","),
        [Env.brokerFile]: credential,
        [StatusEnv]: statusFile(),
        MESH_RUNTIME_EXTERNAL_LIMIT_MB: String(LIMIT_MB),
        MESH_RUNTIME_INITIAL_BACKOFF_MS: "200",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    await deadline(
      statusUntil(statusFile(), (s) =>
        Object.values(s.modules).every((m) => m.state === ModuleState.serving),
      ),
      WAIT,
      "every module serving",
    );
    steady.done = (async () => {
      while (!steady.stop) {
        try {
          await call("steady", "ping", { n: steady.calls });
        } catch (error) {
          steady.failed.push(
            isMeshError(error) ? `${error.code}: ${error.message}` : String(error),
          );
        }
        steady.calls += 1;
      }
    })();
  });

  after(async () => {
    steady.stop = true;
    await steady.done;
    if (child?.pid !== undefined && child.exitCode === null) process.kill(child.pid, "SIGKILL");
    await bus?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const alive = (): void => {
    assert.equal(child?.exitCode, null, `the runtime exited:\n${stderr}`);
    assert.equal(child?.signalCode, null, `the runtime was killed:\n${stderr}`);
  };

  test("a module holding Buffers without bound is stopped at its limit and reported failing", async () => {
    const failing = statusUntil(
      statusFile(),
      (s) => s.modules["hoarder"]?.state === ModuleState.failing,
    );
    const hoard = call("hoarder", "hoard", {}).then(
      () => assert.fail("hoard answered"),
      (error: unknown) => error,
    );
    const status = await deadline(failing, WAIT, "hoarder reported failing");
    assert.match(status.modules["hoarder"]?.error ?? "", /outside its heap.*limit of 64 MiB/);
    const error = await hoard;
    assert.ok(isMeshError(error, ErrorCode.INTERNAL), String(error));
    alive();
    // Bounded: the runtime did not grow far past the module's limit (it would reach GiBs).
    assert.ok((await rssMb(child?.pid ?? 0)) < 600, "the runtime's memory stayed bounded");
    assert.ok(status.modules["steady"]?.state === ModuleState.serving);
  });

  test("process.kill of its own pid, its group or its host ends only the module's worker", async () => {
    for (const target of ["self", "group", "parent", "raw"]) {
      const restarts = (await statusOf()).modules["killer"]?.restarts ?? 0;
      await deadline(
        statusUntil(statusFile(), (s) => s.modules["killer"]?.state === ModuleState.serving),
        WAIT,
        "killer serving",
      );
      const failing = statusUntil(
        statusFile(),
        (s) =>
          s.modules["killer"]?.state === ModuleState.failing &&
          (s.modules["killer"]?.restarts ?? 0) >= restarts,
      );
      await assert.rejects(call("killer", "kill", { target }), (e) =>
        isMeshError(e, ErrorCode.INTERNAL),
      );
      const status = await deadline(failing, WAIT, `killer failing after ${target}`);
      assert.match(status.modules["killer"]?.error ?? "", /only its worker was ended/);
      alive();
    }
  });

  test("module code cannot put the original process.kill back; signal 0 still works", async () => {
    await deadline(
      statusUntil(statusFile(), (s) => s.modules["killer"]?.state === ModuleState.serving),
      WAIT,
      "killer serving again",
    );
    assert.deepEqual(await call("killer", "restore", {}), { same: true });
    assert.deepEqual(await call("killer", "alive", {}), { alive: true });
  });

  test("the other module answered every call throughout", async () => {
    steady.stop = true;
    await steady.done;
    console.log(`steady: ${steady.calls} calls, ${steady.failed.length} failed`);
    assert.ok(steady.calls > 10, `only ${steady.calls} calls were made`);
    assert.deepEqual(steady.failed, []);
    alive();
  });

  const statusOf = () => readStatus(statusFile());
});
