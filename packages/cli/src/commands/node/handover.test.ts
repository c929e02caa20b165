/**
 * The host hands a node over to a new host build without restarting its processes (decision
 * 0200), on a real bus, with real host builds (the `mesh-host` part built as the builder builds
 * it, and variants of it): `mesh host` — the launcher — runs the CLI's own host; the composition
 * names a build whose version says "0.1.0-next", and that build takes the node over: its presence
 * says the new version, the node's process keeps its pid, and what it wrote during the handover is
 * all in its log, in order. Then a build that breaks right after it takes over: the host before it
 * resumes, the process still keeps its pid, and the condition names the build.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ArtifactStore, KvBucket, MeshBus, ensureLayout, writeCredential } from "@mesh/bus";
import {
  deadline,
  processesNaming,
  reapWithMe,
  startTestServer,
  waitFor,
  type TestServer,
} from "@mesh/bus/testing";
import { fingerprintOf, hostGrant } from "@mesh/core";
import { packArchive } from "@mesh/delivery";
import {
  Bucket,
  HOST_MODULE,
  HOST_RESOURCE_ID,
  ObjectStore,
  Principal,
  artifactSource,
  bundlePath,
  hostUpgradeCondition,
  type ComposedModule,
  type Credential,
  type Resource,
} from "@mesh/protocol";
import { builtHost, hostVariant, type HostBuild } from "../../testing/host-builds.js";
import { readConditions } from "../status/status.js";

const MAIN = fileURLToPath(new URL("../../main.js", import.meta.url));
const NODE = "h1";
const PASSWORD = "handover-test-password";
const NEXT_VERSION = "0.1.0-next";
/** Writes a numbered line every 20 ms: a gap in its log would show a line lost in a handover. */
const TICKER = `let i = 0; setInterval(() => console.log("tick " + i++), 20);`;

let server: TestServer;
let dir: string;
let admin: MeshBus;
let launcher: ChildProcess | undefined;
let stderr = "";

before(async () => {
  server = await startTestServer({
    users: [{ user: `host-${NODE}`, password: PASSWORD, permissions: hostGrant({ node: NODE }) }],
  });
  dir = await mkdtemp(join(tmpdir(), "mesh-handover-"));
  admin = await MeshBus.connect(as(server.admin.user, server.admin.password, Principal.controller));
  await ensureLayout(admin);
});

after(async () => {
  if (launcher !== undefined && launcher.exitCode === null) launcher.kill("SIGKILL");
  for (const pid of await processesNaming(dir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  await admin.close();
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

function as(user: string, password: string, module: string): Credential {
  return { servers: [server.url], user, password, node: NODE, module };
}

const root = (): string => join(dir, "root");

/** The node's composition, written as the controller would: the ticker, and a host build. */
async function compose(ticker: string, host?: HostBuild): Promise<void> {
  const resources: Resource[] = [
    {
      id: "tick.process-main",
      type: "process",
      name: "main",
      module: "tick",
      source: artifactSource(ObjectStore.artifacts, ticker),
      digest: ticker,
      path: bundlePath(root(), "tick", "main"),
      run: [process.execPath, "main.js"],
      env: {},
      "restart-on": [],
    },
  ];
  const modules: Record<string, ComposedModule> = {
    tick: { build: "1-ticker", config: {}, bound: {} },
  };
  if (host !== undefined) {
    resources.push({
      id: HOST_RESOURCE_ID,
      type: "host",
      module: HOST_MODULE,
      source: artifactSource(ObjectStore.artifacts, host.digest),
      digest: host.digest,
      entry: host.entry,
    });
    modules[HOST_MODULE] = { build: `2-${host.digest.slice(0, 8)}`, config: {}, bound: {} };
  }
  const value = {
    node: NODE,
    resources,
    modules,
    requires: { features: ["host-build"], version: "0.1.0" },
  };
  const composed = await KvBucket.open(admin, Bucket.composed);
  await composed.put(NODE, { ...value, fingerprint: fingerprintOf(value) });
}

async function tickerPid(): Promise<number | undefined> {
  const text = await readFile(join(root(), "state", "applied.json"), "utf8").catch(() => "{}");
  const state = JSON.parse(text) as { processes?: Record<string, { pid?: number }> };
  return state.processes?.["tick.process-main"]?.pid;
}

async function presenceVersion(): Promise<string | undefined> {
  const presence = await KvBucket.open(admin, Bucket.presence);
  return (await presence.get(NODE))?.value.facts.version;
}

async function hostHave(): Promise<{ health: string; build?: string; code?: string } | undefined> {
  const have = await KvBucket.open(admin, Bucket.have);
  const value = (await have.get(`${NODE}.${HOST_MODULE}`))?.value;
  return value === undefined
    ? undefined
    : {
        health: value.health,
        ...(value.build === undefined ? {} : { build: value.build }),
        ...(value.lastErrorCode === undefined ? {} : { code: value.lastErrorCode }),
      };
}

/**
 * The ticker's numbers in its log, checked to run on without a repeat, and without a gap up to
 * `whole` lines (a host that crashes loses what it had read and not yet written, as a kill -9 of
 * any host does); returns how many lines there are and how many are missing after `whole`.
 */
async function ticksInOrder(whole = Infinity): Promise<{ lines: number; missing: number }> {
  const text = await readFile(join(root(), "logs", "tick", "main.log"), "utf8");
  const numbers = [...text.matchAll(/^tick (\d+)$/gm)].map((m) => Number(m[1]));
  assert.ok(numbers.length > 0, "the ticker's log holds its lines");
  let missing = 0;
  numbers.forEach((n, i) => {
    if (i === 0) return;
    const before = numbers[i - 1] ?? 0;
    if (i < whole) assert.equal(n, before + 1, `line ${i} of the ticker's log`);
    else assert.ok(n > before, `line ${i} of the ticker's log comes after line ${i - 1}`);
    missing += n - before - 1;
  });
  return { lines: numbers.length, missing };
}

test("a host build takes the node over without restarting its processes; a broken one leaves the host before it running", async (t) => {
  try {
    await handovers(t);
  } catch (error) {
    t.diagnostic(`the launcher's and hosts' output:\n${stderr.slice(-20_000)}`);
    throw error;
  }
});

async function handovers(t: { diagnostic(line: string): void }): Promise<void> {
  const base = await builtHost();
  const next = await hostVariant(base, { version: NEXT_VERSION });
  const broken = await hostVariant(next, { breakAfterTakeOver: true });
  const artifacts = await ArtifactStore.open(admin);
  for (const build of [next, broken]) await artifacts.put(build.bytes);
  const ticker = (
    await artifacts.put(packArchive([{ path: "main.js", bytes: Buffer.from(TICKER) }]))
  ).digest;
  const credential = join(dir, "host.json");
  await writeCredential(credential, as(`host-${NODE}`, PASSWORD, Principal.host));
  await compose(ticker);

  launcher = spawn(
    process.execPath,
    [MAIN, "host", "--node", NODE, "--root", root(), "--credential", credential],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  reapWithMe(launcher.pid, { root: dir });
  launcher.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((r) => launcher?.once("exit", (code) => r(code)));

  const pid = await waitFor(tickerPid, { what: "the ticker running", timeout: 60_000 });
  assert.equal(await waitFor(presenceVersion, { what: "the presence" }), "0.1.0");

  // A build of a newer version: it boots beside the host, takes the node over, and is healthy.
  await compose(ticker, next);
  await waitFor(async () => (await presenceVersion()) === NEXT_VERSION, {
    what: `the presence saying ${NEXT_VERSION}`,
    timeout: 180_000,
  });
  await waitFor(async () => (await hostHave())?.health === "healthy", {
    what: "mesh-host healthy on the new build",
    timeout: 60_000,
  });
  assert.equal(await tickerPid(), pid, "the ticker was not restarted");
  process.kill(pid, 0); // and it is the same process, alive
  // The launcher starts this build from now on (after a restart too).
  const launched = await waitFor(
    async () => {
      const text = await readFile(join(root(), "host", "launch.json"), "utf8").catch(() => "{}");
      const state = JSON.parse(text) as { current?: { digest: string; version?: string } };
      return state.current?.digest === next.digest && state.current;
    },
    { what: "the launcher's state naming the new build" },
  );
  assert.equal(launched.version, NEXT_VERSION);
  const first = await ticksInOrder();
  t.diagnostic(`${first.lines} ticks in order, none missing, across the handover`);

  // A build that breaks once it has taken the node over: the host before it resumes.
  await compose(ticker, broken);
  const condition = await waitFor(
    async () =>
      (await readConditions(admin, { module: HOST_MODULE })).find(
        (c) => c.name === hostUpgradeCondition(NODE) && c.resolved !== true,
      ),
    { what: "the upgrade condition", timeout: 180_000 },
  );
  assert.match(condition.message, new RegExp(broken.digest.slice(0, 12)));
  assert.match(condition.message, /exited with code 70 after it took the node over/);
  await waitFor(async () => (await hostHave())?.code === "HOST_UPGRADE_FAILED", {
    what: "mesh-host failing with HOST_UPGRADE_FAILED",
    timeout: 60_000,
  });
  assert.equal(await presenceVersion(), NEXT_VERSION, "the host before it runs on");
  assert.equal(await tickerPid(), pid, "the ticker was not restarted");
  process.kill(pid, 0);

  // Back to the build that runs: healthy again, the condition resolved.
  await compose(ticker, next);
  await waitFor(async () => (await hostHave())?.health === "healthy", {
    what: "mesh-host healthy again",
    timeout: 60_000,
  });
  await waitFor(
    async () =>
      (await readConditions(admin, { module: HOST_MODULE })).find(
        (c) => c.name === hostUpgradeCondition(NODE) && c.resolved === true,
      ),
    { what: "the upgrade condition resolved", timeout: 60_000 },
  );
  const all = await ticksInOrder(first.lines);
  t.diagnostic(`${all.lines} ticks in order; ${all.missing} lost when the broken build crashed`);

  launcher.kill("SIGTERM");
  assert.equal(await deadline(exited, 60_000, "the launcher stopping"), 0, stderr);
  assert.equal(await tickerPid(), pid, "a host that stops leaves its processes running");
}
