/**
 * Issue 24 item 2 on a real mesh of three nodes (decision 0201): `mesh up` registers the host
 * build the CLI ships and every node's host runs it; `mesh upgrade <folder>` with a new mesh whose
 * host build says another version rolls it out in waves — the canary first, where the mesh runs
 * hosts of two versions and calls and config reach both, then the rest — and every host ends on
 * the new version, the node's processes keep their pids, and a caller's tool calls on every node
 * all through it fail 0 times. Then a deliberately broken host build: the canary's host before it
 * resumes, says mesh-host/upgrade-<node>, the rollout halts, and no other node is handed to it.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus, request } from "@mesh/bus";
import { stretched } from "@mesh/bus/testing";
import {
  Bucket,
  HOST_MODULE,
  MESH_VERSION,
  RUNTIME_PROCESS_ID,
  hostUpgradeCondition,
  hostVersionCondition,
  toolSubject,
  type RolloutStatus,
} from "@mesh/protocol";
import { readConditions } from "../commands/status/status.js";
import { rootProcesses } from "../testing/demo-mesh.js";
import { joinMeshUp, startMeshUp, type JoinedNode, type MeshUp } from "../testing/mesh-up.js";
import type { HostChange } from "../testing/host-builds.js";
import { newMesh } from "../testing/new-mesh.js";
import { runMesh, type MeshRun } from "../testing/run-mesh.js";
import { statusOf, until } from "../testing/until.js";

const HELLO = fileURLToPath(new URL("../../../../examples/modules/hello", import.meta.url));
const NODES = ["up-1", "up-2", "up-3"] as const;
const NEXT = "0.1.0-next";
const BROKEN = "0.1.0-broken";
const OLD = "0.0.9-old";
/** Heartbeats every 2 s, so a wave's gate holds soon after its min-healthy. */
const BEAT = ["--heartbeat-ms", "2000"];
const LONG = 240_000;

let dir = "";
let up: MeshUp | undefined;
const joined: JoinedNode[] = [];
let bus: MeshBus | undefined;
let caller: Caller | undefined;
/** Each node's processes (resource id → pid) before the upgrade. */
const pidsBefore = new Map<string, Record<string, number>>();

const rootOf = (node: string): string => join(dir, node);

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mesh-upgrade-"));
  up = await startMeshUp({ root: rootOf(NODES[0]), node: NODES[0], args: BEAT });
  for (const node of NODES.slice(1))
    joined.push(await joinMeshUp(up, { node, root: rootOf(node), args: BEAT }));
  bus = await MeshBus.connectWithFile(up.report.credentials.operator);
});

after(async () => {
  await caller?.stop();
  await bus?.close();
  for (const node of joined) await node.stop();
  await up?.stop();
  if (dir !== "") await rm(dir, { recursive: true, force: true });
});

const mesh = (args: readonly string[]): Promise<MeshRun> =>
  runMesh([...args, "--root", rootOf(NODES[0])], { deadlineMs: 120_000 });

async function meshJson<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
  const run = await mesh([...args, "--json"]);
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

const explain = { explain: () => statusOf(rootOf(NODES[0])) };
const theBus = (): MeshBus => bus as MeshBus;

/** The version a node's host says in its presence. */
async function versionOf(node: string): Promise<string | undefined> {
  return (await (await KvBucket.open(theBus(), Bucket.presence)).get(node))?.value.facts.version;
}

/** What a node's host reports of `mesh-host`: the build it runs and how. */
async function hostHave(node: string) {
  return (await (await KvBucket.open(theBus(), Bucket.have)).get(`${node}.${HOST_MODULE}`))?.value;
}

/** The rollout of mesh-host as the assigner records it. */
async function hostRollout() {
  return (await (await KvBucket.open(theBus(), Bucket.rollouts)).get(HOST_MODULE))?.value;
}

/** Every node's host healthy on `build` and saying `version`. */
const allOn = (build: string, version: string, what: string): Promise<true> =>
  until(
    async () => {
      for (const node of NODES) {
        const have = await hostHave(node);
        if (have?.build !== build || have.health !== "healthy") return undefined;
        if ((await versionOf(node)) !== version) return undefined;
      }
      return true;
    },
    LONG,
    what,
    explain,
  );

/** hello's greet answering `text` on every node. */
const everyGreets = (text: string, what: string): Promise<true> =>
  until(
    async () => {
      for (const node of NODES) if ((await greet(node)).text !== text) return undefined;
      return true;
    },
    LONG,
    what,
    explain,
  );

/** The host's rollout once it rolls out `build` and its status is `status`. */
const hostRolloutIn = (build: string, status: RolloutStatus, what: string) =>
  until(
    async () => {
      const r = await hostRollout();
      return r?.build === build && r.status === status ? r : undefined;
    },
    LONG,
    what,
    explain,
  );

/** mesh-host's condition `name` once it stands open, or once it is resolved. */
const hostCondition = (name: string, state: "open" | "resolved") =>
  until(
    async () =>
      (await readConditions(theBus(), { module: HOST_MODULE })).find(
        (c) => c.name === name && (c.resolved === true) === (state === "resolved"),
      ),
    LONG,
    `the condition ${HOST_MODULE}/${name} ${state}`,
    explain,
  );

/** `mesh upgrade` with a new mesh of `version` made in `name`: the host build it registers. */
async function upgradeHost(name: string, version: string, change: HostChange): Promise<string> {
  const made = await newMesh(join(dir, name), version, change);
  const upgraded = await meshJson<{ modules: Array<{ module: string; build?: string }> }>([
    "upgrade",
    made.folder,
  ]);
  return upgraded.modules.find((m) => m.module === HOST_MODULE)?.build ?? "";
}

/** The node's processes as its host's state records them: resource id → pid. */
async function processesOf(node: string): Promise<Record<string, number>> {
  const text = await readFile(join(rootOf(node), "state", "applied.json"), "utf8");
  const state = JSON.parse(text) as { processes?: Record<string, { pid?: number }> };
  const out: Record<string, number> = {};
  for (const [id, p] of Object.entries(state.processes ?? {}))
    if (p.pid !== undefined) out[id] = p.pid;
  return out;
}

/**
 * The node's processes once no runtime handover is under way (hello's arrival replaces the
 * runtime without a gap): one serving runtime under the root, the one its state records.
 */
const steadyProcesses = (node: string): Promise<Record<string, number>> =>
  until(
    async () => {
      const processes = await processesOf(node);
      const running = await rootProcesses(rootOf(node));
      // A standby booted ahead for the next handover is no module process; a second runtime is.
      const runtimes = running.filter((p) => p.kind === "runtime");
      return runtimes.length === 1 && runtimes[0]?.pid === processes[RUNTIME_PROCESS_ID]
        ? processes
        : undefined;
    },
    LONG,
    `${node}'s one runtime, the one its state records`,
    explain,
  );

/** Every process a node ran before the upgrade runs on with the same pid, alive. */
async function samePids(when: string): Promise<void> {
  for (const node of NODES) {
    const now = await processesOf(node);
    for (const [id, pid] of Object.entries(pidsBefore.get(node) ?? {})) {
      assert.equal(now[id], pid, `${node}'s ${id} ${when}: the same process`);
      process.kill(pid, 0); // alive
    }
  }
}

/** hello's greet on `node`, answered, or the error it failed with. */
async function greet(node: string): Promise<{ text?: string; error?: string }> {
  try {
    const reply = await request(
      theBus(),
      toolSubject(node, "hello", "greet"),
      { name: "Ada" },
      { timeoutMs: stretched(15_000) },
    );
    return { text: (reply as { text?: string } | undefined)?.text ?? "" };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** Calls hello's greet on every node, one call after another, counting what failed. */
class Caller {
  answered = 0;
  readonly failures: string[] = [];
  #stopped = false;
  readonly #running: Promise<void>;

  constructor() {
    this.#running = (async () => {
      while (!this.#stopped) {
        for (const node of NODES) {
          const { error } = await greet(node);
          if (error === undefined) this.answered += 1;
          else this.failures.push(`${node}: ${error}`);
        }
        // Paced, not waited on: a round every 100 ms is load enough on a shared machine.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
  }

  async stop(): Promise<{ answered: number; failures: string[] }> {
    this.#stopped = true;
    await this.#running;
    return { answered: this.answered, failures: this.failures };
  }
}

describe("mesh upgrade on a mesh of three nodes (issue 24 item 2)", () => {
  let shippedHost = "";
  let nextHost = "";
  let canary = "";

  test("every node's host runs the host build the CLI ships; hello answers on every node", async (t) => {
    shippedHost = await until(
      async () => {
        const builds = new Set<string>();
        for (const node of NODES) {
          const have = await hostHave(node);
          if (have?.health !== "healthy" || have.build === undefined) return undefined;
          builds.add(have.build);
        }
        return builds.size === 1 ? [...builds][0] : undefined;
      },
      LONG,
      "mesh-host healthy on every node, on one build",
      explain,
    );
    for (const node of NODES) assert.equal(await versionOf(node), MESH_VERSION);
    await meshJson(["module", "add", HELLO]);
    await meshJson(["assign", "hello", "--all"]);
    await everyGreets("Hello, Ada!", "hello built and answering on every node");
    for (const node of NODES) {
      const processes = await steadyProcesses(node);
      pidsBefore.set(node, processes);
      t.diagnostic(`${node}: ${JSON.stringify(processes)}`);
    }
  });

  test("mesh upgrade: the canary first (two host versions, calls and config reach both), then every host on the new version, no process restarted, 0 failed calls", async () => {
    // The canary is proven, then the rollout waits for the operator: the skew can be looked at.
    await meshJson([
      ...["rollout", "set", HOST_MODULE, "--canary", "1", "--batch", "100%"],
      ...["--min-healthy", "4s", "--pause-after-canary"],
    ]);
    caller = new Caller();
    const made = await newMesh(join(dir, "next"), NEXT);
    const upgraded = await meshJson<{
      version: string;
      from: string;
      modules: Array<{ module: string; build?: string; written: boolean }>;
    }>(["upgrade", made.folder]);
    assert.equal(upgraded.version, NEXT);
    assert.equal(upgraded.from, MESH_VERSION);
    const host = upgraded.modules.find((m) => m.module === HOST_MODULE);
    assert.equal(host?.written, true, "the new host build is registered");
    nextHost = host?.build ?? "";
    assert.notEqual(nextHost, shippedHost);
    for (const m of upgraded.modules.filter((x) => x.module !== HOST_MODULE))
      assert.equal(m.written, false, `${m.module} is this version's build still`);

    const paused = await hostRolloutIn(
      nextHost,
      "paused",
      "the host's rollout paused after its canary",
    );
    assert.equal(paused.admitted.length, 1, `one canary: ${paused.admitted.join(", ")}`);
    canary = paused.admitted[0] ?? "";
    const others = NODES.filter((n) => n !== canary);
    // Two versions at once: the canary on the new host, the others on the old.
    assert.equal(await versionOf(canary), NEXT);
    assert.equal((await hostHave(canary))?.build, nextHost);
    for (const node of others) {
      assert.equal(await versionOf(node), MESH_VERSION);
      assert.equal((await hostHave(node))?.build, shippedHost);
    }
    await meshJson(["config", "set", "hello", "greeting", "Hi"]);
    await everyGreets("Hi, Ada!", "the new greeting answered by hello on both hosts' nodes");
    assert.equal(await versionOf(others[0] ?? ""), MESH_VERSION, "still two versions");

    await meshJson(["rollout", "resume", HOST_MODULE]);
    await allOn(nextHost, NEXT, `every host on ${NEXT}`);
    await until(
      async () => ((await hostRollout())?.status === "done" ? true : undefined),
      LONG,
      "the host's rollout done",
      explain,
    );
    for (const node of NODES) {
      const launch = JSON.parse(
        await readFile(join(rootOf(node), "host", "launch.json"), "utf8"),
      ) as { current?: { version?: string } };
      assert.equal(launch.current?.version, NEXT, `${node}'s launcher starts the new build`);
    }
    await samePids("after the upgrade");
    assert.deepEqual(caller.failures, [], "no tool call failed during the upgrade");
    assert.ok(caller.answered > 0);
  });

  test("a broken host build: the canary's host before it resumes and says why, the rollout halts, no other node is handed to it", async () => {
    assert.ok(canary !== "" && nextHost !== "", "the upgrade before ran");
    const broken = await upgradeHost("broken", BROKEN, { breakAfterTakeOver: true });
    assert.ok(broken !== "" && broken !== nextHost);
    const condition = await hostCondition(hostUpgradeCondition(canary), "open");
    assert.match(condition.message, /after it took the node over/);
    const halted = await hostRolloutIn(broken, "failed", "the host's rollout halted");
    assert.deepEqual(halted.admitted, [canary], "only the canary was given the broken build");
    // Set back to the build it ran healthy: the host that resumed runs it, healthy again.
    await allOn(nextHost, NEXT, `every host on ${NEXT} again`);
    const have = await KvBucket.open(theBus(), Bucket.have);
    const reports = (await have.history(`${canary}.${HOST_MODULE}`)).map(
      (h) => `${h.value?.health ?? "-"} ${h.value?.lastErrorCode ?? ""}`,
    );
    assert.ok(
      reports.includes("failing HOST_UPGRADE_FAILED"),
      `the canary reported mesh-host failing: ${reports.join("; ")}`,
    );
    for (const node of NODES.filter((n) => n !== canary)) {
      const history = await have.history(`${node}.${HOST_MODULE}`);
      assert.ok(
        history.every((h) => h.value?.build !== broken),
        `${node} was never handed to the broken build`,
      );
    }
    await samePids("after the broken build");
    assert.deepEqual((caller as Caller).failures, [], "no tool call failed through both upgrades");
  });

  test("a host too old for its composition refuses it, naming the version it needs, runs what it ran, and takes the host build that applies it", async (t) => {
    // A host build whose feature table lacks host-build: as a host of a version before it.
    const old = await upgradeHost("old", OLD, { withoutHostBuild: true });
    const condition = await hostCondition(hostVersionCondition(canary), "open");
    assert.match(condition.message, /host-build/, condition.message);
    assert.match(condition.message, /upgrade the host to mesh 0\.1\.0/, condition.message);
    assert.equal(await versionOf(canary), OLD, "the too-old host runs the canary");
    assert.equal((await hostHave(canary))?.build, old);
    // What ran runs on, and answers: hello's new greeting was applied before the refusal.
    assert.equal((await greet(canary)).text, "Hi, Ada!");
    await samePids("while the canary's host refuses its composition");

    // The way out is open: set back, the refused composition's host build is taken.
    await meshJson(["rollout", "abort", HOST_MODULE]);
    await allOn(nextHost, NEXT, `every host on ${NEXT} once the old build is aborted`);
    await hostCondition(hostVersionCondition(canary), "resolved");
    await samePids("after the too-old host");
    const calls = await (caller as Caller).stop();
    caller = undefined;
    assert.deepEqual(calls.failures, [], "no tool call failed through three upgrades");
    t.diagnostic(`${calls.answered} tool calls answered through three upgrades, 0 failed`);
  });
});
