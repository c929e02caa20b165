/**
 * The launcher's own decisions (decision 0200), with host builds that are small scripts speaking
 * its words (wire.ts) — real processes it starts, stops and kills: a build from the root that
 * exits before it runs is set aside for the one before it; a standby that does not say it is
 * ready is killed and the running host is told the build did not take the node over; a stop is
 * passed on once and its exit code is the launcher's.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "@mesh/bus/testing";
import { Launcher } from "./launcher.js";
import { hostBuildDir } from "./wire.js";

/**
 * A host build that runs, parks and exits when told, and writes that it started and each message
 * it hears to `heard`.
 */
const GOOD = (heard: string): string => `
const { appendFileSync } = require("node:fs");
const say = (m) => process.send(m);
process.on("message", (m) => {
  appendFileSync(${JSON.stringify(heard)}, JSON.stringify(m) + "\\n");
  if (m.t === "take-over") say({ t: "healthy" });
  if (m.t === "park") say({ t: "parked" });
  if (m.t === "exit") process.exit(0);
});
process.on("SIGTERM", () => process.exit(0));
appendFileSync(${JSON.stringify(heard)}, JSON.stringify({ t: "started" }) + "\\n");
if (process.env.MESH_HOST_STANDBY === "1") say({ t: "standby-ready", version: "good" });
else say({ t: "running" });
if (process.env.UPGRADE_TO) say({ t: "upgrade", digest: process.env.UPGRADE_TO, entry: "main.cjs" });
setInterval(() => {}, 1 << 30);
`;

async function withRoot(body: (root: string) => Promise<void>): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "mesh-launcher-"));
  try {
    await body(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function build(root: string, digest: string, code: string): Promise<void> {
  await mkdir(hostBuildDir(root, digest), { recursive: true });
  await writeFile(join(hostBuildDir(root, digest), "main.cjs"), code);
}

const launchState = async (root: string): Promise<Record<string, unknown>> =>
  JSON.parse(await readFile(join(root, "host", "launch.json"), "utf8")) as Record<string, unknown>;

test("a build from the root that exits before it runs is set aside for the one before it", async () => {
  await withRoot(async (root) => {
    const heard = join(root, "heard");
    await build(root, "good", GOOD(heard));
    await build(root, "bad", "process.exit(3);");
    await mkdir(join(root, "host"), { recursive: true });
    await writeFile(
      join(root, "host", "launch.json"),
      JSON.stringify({
        v: 1,
        current: { digest: "bad", entry: "main.cjs" },
        previous: { digest: "good", entry: "main.cjs" },
        failed: [],
      }),
    );
    const stop = new AbortController();
    const logged: string[] = [];
    const launcher = new Launcher({
      root,
      args: [],
      own: { argv: [process.execPath, "-e", "process.exit(9)"] },
      log: (line) => logged.push(line),
    });
    const ran = launcher.run({ signal: stop.signal });
    const state = await waitFor(async () => {
      const now = await launchState(root).catch(() => undefined);
      return (now?.current as { digest?: string } | undefined)?.digest === "good" && now;
    });
    assert.deepEqual(
      (state.failed as Array<{ digest: string; reason: string }>).map((f) => [f.digest, f.reason]),
      [["bad", "host build bad… exited with code 3 before it ran"]],
    );
    await waitFor(async () => (await readFile(heard, "utf8").catch(() => "")).includes("started"));
    stop.abort();
    assert.equal(await ran, 0, logged.join("\n"));
  });
});

test("a standby that does not say it is ready is ended, and the host is told its build did not take the node over", async () => {
  await withRoot(async (root) => {
    const heard = join(root, "heard");
    await build(root, "slow", "setInterval(() => {}, 1 << 30);");
    const stop = new AbortController();
    const launcher = new Launcher({
      root,
      args: [],
      own: {
        argv: [process.execPath, "-e", GOOD(heard)],
        env: { UPGRADE_TO: "slow" },
      },
      stepMs: { boot: 500 },
      log: () => undefined,
    });
    const ran = launcher.run({ signal: stop.signal });
    const told = await waitFor(async () => {
      const lines = (await readFile(heard, "utf8").catch(() => "")).split("\n").filter(Boolean);
      return lines.map((l) => JSON.parse(l) as { t: string }).find((m) => m.t === "not-upgraded");
    });
    assert.deepEqual(told, {
      t: "not-upgraded",
      failed: { digest: "slow", reason: "it did not say it was ready within 500 ms" },
    });
    const state = await launchState(root);
    assert.equal(state.current, undefined, "the CLI's own build runs on");
    assert.deepEqual(
      (state.failed as Array<{ digest: string }>).map((f) => f.digest),
      ["slow"],
    );
    stop.abort();
    assert.equal(await ran, 0);
  });
});

test("a build that takes the node over is what the launcher runs from then on; the host before it is told to exit", async () => {
  await withRoot(async (root) => {
    const heard = join(root, "heard");
    await build(root, "next", GOOD(join(root, "heard-next")));
    const stop = new AbortController();
    const launcher = new Launcher({
      root,
      args: [],
      own: { argv: [process.execPath, "-e", GOOD(heard)], env: { UPGRADE_TO: "next" } },
      log: () => undefined,
    });
    const ran = launcher.run({ signal: stop.signal });
    const state = await waitFor(async () => {
      const now = await launchState(root).catch(() => undefined);
      return (now?.current as { digest?: string } | undefined)?.digest === "next" && now;
    });
    assert.deepEqual(state.current, { digest: "next", entry: "main.cjs", version: "good" });
    const toldOld = await waitFor(async () => {
      const lines = (await readFile(heard, "utf8")).split("\n").filter(Boolean);
      return lines.length >= 3 && lines.map((l) => (JSON.parse(l) as { t: string }).t);
    });
    assert.deepEqual(toldOld, ["started", "park", "exit"]);
    stop.abort();
    assert.equal(await ran, 0);
    const toldNew = (await readFile(join(root, "heard-next"), "utf8")).split("\n").filter(Boolean);
    assert.deepEqual(
      toldNew.map((l) => (JSON.parse(l) as { t: string }).t),
      ["started", "take-over"],
    );
  });
});
