/**
 * The host's runtime against a real bus, with a stand-in runtime that speaks the standby's
 * protocol: the node's idle time (`runtimeIdleMs`, `mesh host --tools-idle`) reaches the runtime's
 * environment, and a composition that moves only the runtime's environment is taken over by the
 * standby booted ahead (no process started), which is handed the new environment; a new build of
 * the runtime is started anew.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Env, RUNTIME_MODULE, RUNTIME_PROCESS_ID } from "@mesh/protocol";
import { Host } from "./host.js";
import { bundleOf, busAndRoot, processResource, waitFor } from "./test-support.js";

/** Writes what it serves as (its env, pid, whether it stood by) and a status file as the runtime does. */
const RUNTIME = `
const { writeFileSync, renameSync } = require("node:fs");
let stoodBy = false;
const serve = () => {
  const env = process.env;
  const out = { pid: process.pid, stoodBy, version: env.VERSION, idle: env.${Env.runtimeIdleMs}, standby: env.${Env.runtimeStandby} ?? null };
  writeFileSync(env.OUT + "." + env.VERSION + ".tmp", JSON.stringify(out));
  renameSync(env.OUT + "." + env.VERSION + ".tmp", env.OUT + "." + env.VERSION);
  const status = env.${Env.runtimeStatus}.replace("{pid}", String(process.pid));
  const body = { v: 1, node: "n1", pid: process.pid, state: "running", at: new Date().toISOString(), modules: {} };
  writeFileSync(status + ".tmp", JSON.stringify(body));
  renameSync(status + ".tmp", status);
};
if (process.env.${Env.runtimeStandby} === "1") {
  stoodBy = true;
  process.on("SIGUSR2", () => undefined);
  process.on("message", (m) => {
    if (m.t !== "serve") return;
    for (const name of m.env.unset) delete process.env[name];
    Object.assign(process.env, m.env.set);
    process.disconnect();
    serve();
  });
  process.send({ t: "standby-ready" });
} else serve();
setInterval(() => {}, 1 << 30);
`;

const fx = busAndRoot(["n1"]);

test("the node's idle time reaches the runtime, and a new environment is handed to the standby", async () => {
  const { bus, root } = fx;
  const host = await Host.create({
    node: "n1",
    root,
    credential: bus.hostCredential("n1"),
    runtimeIdleMs: 1_500,
    health: { healthyMs: 500 },
    graceMs: 2_000,
    pollMs: 100,
    heartbeatMs: 500,
    stopProcessesOnStop: true,
    log: () => undefined,
  });
  const running = host.run({ signal: new AbortController().signal });
  try {
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": RUNTIME }))).digest;
    const out = join(root, "runtime-out");
    const runtime = (version: number, code = digest) => ({
      ...processResource({
        root,
        module: RUNTIME_MODULE,
        name: "runtime",
        digest: code,
        env: { VERSION: String(version), OUT: out },
      }),
      id: RUNTIME_PROCESS_ID,
    });
    const served = (version: number) =>
      waitFor(`the runtime serving as ${version}`, async () => {
        const text = await readFile(`${out}.${version}`, "utf8").catch(() => "");
        return text === "" ? undefined : (JSON.parse(text) as Record<string, unknown>);
      });
    await bus.compose("n1", [runtime(1)]);
    const first = await served(1);
    assert.equal(first["idle"], "1500", "the node's idle time is the runtime's");
    await bus.compose("n1", [runtime(2)]);
    const second = await served(2);
    assert.equal(second["stoodBy"], true, "the standby booted ahead took over: no start");
    assert.notEqual(second["pid"], first["pid"]);
    assert.equal(second["idle"], "1500");
    assert.equal(second["standby"], null, "MESH_RUNTIME_STANDBY is taken away when it serves");
    // A new build of the runtime itself: a standby booted from the old code never takes over.
    const rebuilt = await bundleOf({ "main.js": `${RUNTIME}\n// build 2\n` });
    const code = (await bus.artifacts.put(rebuilt)).digest;
    await bus.compose("n1", [runtime(3, code)]);
    const third = await served(3);
    assert.equal(third["stoodBy"], false, "the new build was started, not a standby of the old");
  } finally {
    await host.stop();
    await running;
  }
});
