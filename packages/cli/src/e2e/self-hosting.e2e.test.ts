/**
 * Issue 24 items 1 and 3 on a real mesh from `mesh up` (decision 0190): delivery's parts —
 * mesh-indexer, mesh-builder, mesh-assigner — are modules registered from the archives the CLI
 * ships and run by this node's host, not children of `mesh up`; they show in `mesh status` with
 * their builds and health; a kill -9 of each is handled by its host's supervisor; `mesh put` and
 * an agent through `mesh mcp` go through the assigner's tool, served by the runtime; `mesh up`
 * again on the same root resumes them; `--delivery-on` places them on a node that joins, and
 * back here once that node is gone; a new assigner build that crashes is set back by rule 5,
 * applied by the controller while the assigner cannot (decision 0191), and no other want moves.
 */
import assert from "node:assert/strict";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { KvBucket, MeshBus } from "@mesh/bus";
import { freePort } from "@mesh/bus/testing";
import { Bucket, MeshPart } from "@mesh/protocol";
import type { StatusCell, StatusReport } from "../commands/status/status-report.js";
import { rootProcesses, type MeshProcessKind } from "../testing/demo-mesh.js";
import { connectMcpStdio } from "../testing/mcp-stdio.js";
import { joinMeshUp, startMeshUp, type JoinedNode, type MeshUp } from "../testing/mesh-up.js";
import { runMesh, type MeshRun } from "../testing/run-mesh.js";
import { PARTS_SOURCE } from "../shipped.js";
import { statusOf, until } from "../testing/until.js";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/modules", import.meta.url));
const HERE = "self-1";
const THERE = "self-2";
const LONG = 240_000;
const PARTS: ReadonlyArray<readonly [MeshProcessKind, string]> = [
  ["indexer", MeshPart.indexer],
  ["builder", MeshPart.builder],
  ["assigner", MeshPart.assigner],
];

let dir = "";
let root = "";
let port = 0;
let up: MeshUp | undefined;
let there: JoinedNode | undefined;
/** Each part's build as the first `mesh up` registered it. */
let shipped: Record<string, string> = {};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mesh-self-hosting-"));
  root = join(dir, "here");
  port = await freePort();
  up = await startMeshUp({ root, node: HERE, port });
});

after(async () => {
  await there?.stop();
  await up?.stop();
  if (dir !== "") await rm(dir, { recursive: true, force: true });
});

const mesh = (args: readonly string[]): Promise<MeshRun> =>
  runMesh([...args, "--root", root], { deadlineMs: 60_000 });

async function meshJson<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
  const run = await mesh([...args, "--json"]);
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

const explain = { explain: () => statusOf(root) };

/** The parts' cells of `mesh status --json` on `node`. */
async function partCells(node: string): Promise<Map<string, StatusCell>> {
  const run = await mesh(["status", "--json"]);
  if (run.code !== 0) return new Map();
  const report = JSON.parse(run.stdout) as StatusReport;
  return new Map(
    report.modules
      .filter((c) => c.node === node && PARTS.some(([, part]) => part === c.module))
      .map((c) => [c.module, c]),
  );
}

/**
 * Every part healthy on `node` on its shipped build, as `mesh status` says it, healthy since
 * `since` at the earliest (a report from before a restart does not count).
 */
async function partsHealthy(
  node: string,
  what: string,
  since = 0,
): Promise<Map<string, StatusCell>> {
  return until(
    async () => {
      const cells = await partCells(node);
      const healthy = PARTS.every(([, part]) => {
        const c = cells.get(part);
        return (
          c?.state === "healthy" &&
          c.want?.build === shipped[part] &&
          c.have?.build === shipped[part] &&
          Date.parse(c.have?.since ?? "") >= since
        );
      });
      return healthy ? cells : undefined;
    },
    LONG,
    what,
    explain,
  );
}

/** The pid of the part `kind` that runs under `under` (a root), once there is one. */
const pidOf = (kind: MeshProcessKind, under: string, not?: number): Promise<number> =>
  until(
    async () => (await rootProcesses(under)).find((p) => p.kind === kind && p.pid !== not)?.pid,
    LONG,
    `the ${kind} to run under ${under}`,
    explain,
  );

describe("delivery's parts as modules (issue 24)", () => {
  test("mesh up registers the three parts prebuilt and this node's host runs them: in mesh status with their builds and health", async () => {
    const delivery = up?.report.delivery;
    assert.ok(delivery !== undefined, "mesh up reports where delivery runs");
    assert.equal(delivery.node, HERE);
    assert.deepEqual(Object.keys(delivery.parts).sort(), PARTS.map(([, p]) => p).sort());
    shipped = delivery.parts;
    for (const [kind] of PARTS) {
      assert.equal(up?.report.processes[kind], undefined, `the ${kind} is no child of mesh up`);
    }
    const cells = await partsHealthy(HERE, "the three parts healthy on their shipped builds");
    for (const [, part] of PARTS) assert.equal(cells.get(part)?.have?.health, "healthy");
    const builds = await meshJson<{
      builds: Array<{ build: string; status: string; log: string }>;
    }>(["builds", MeshPart.assigner]);
    assert.deepEqual(
      builds.builds.map((b) => `${b.build} ${b.status}`),
      [`${shipped[MeshPart.assigner]} built`],
    );
    for (const [kind] of PARTS) await pidOf(kind, root);
  });

  test("kill -9 of each part is handled by its host's supervisor: a new process on the same build, healthy again, the restart counted", async () => {
    for (const [kind, part] of PARTS) {
      const before = await pidOf(kind, root);
      const restarts = (await partCells(HERE)).get(part)?.have?.restarts ?? 0;
      process.kill(before, "SIGKILL");
      const after = await pidOf(kind, root, before);
      assert.notEqual(after, before);
      await until(
        async () => {
          const c = (await partCells(HERE)).get(part);
          return c?.state === "healthy" && (c.have?.restarts ?? 0) > restarts ? c : undefined;
        },
        LONG,
        `${part} healthy again after its kill, the restart counted`,
        explain,
      );
    }
  });

  test("mesh put goes through the assigner's tool: refusals coded with a did-you-mean, an agent through mesh mcp calls it, and with no runtime to serve it nothing is put", async () => {
    // The builder and the indexer, as modules, build what is registered.
    await meshJson(["module", "add", join(EXAMPLES, "hello")]);
    const build = await until(
      async () => {
        const run = await mesh(["builds", "hello", "--json"]);
        if (run.code !== 0) return undefined;
        const { builds } = JSON.parse(run.stdout) as {
          builds: Array<{ build: string; status: string }>;
        };
        return builds.find((b) => b.status === "built")?.build;
      },
      LONG,
      "hello built by mesh-builder",
      explain,
    );
    const put = await meshJson<{ key: string; put: string }>([
      "put",
      "hello",
      build,
      "--why",
      "pinned",
    ]);
    assert.deepEqual(put, { ok: true, key: "all.hello", put: build });
    await using bus = await MeshBus.connectWithFile(up?.report.credentials.operator ?? "");
    const puts = await KvBucket.open(bus, Bucket.puts);
    const stood = (await puts.get("all.hello"))?.value;
    assert.equal(stood?.build, build);
    assert.equal(stood?.by, bus.credential.user, "the caller says who it is");
    assert.equal(stood?.why, "pinned");

    const typo = await mesh(["put", "helo", build]);
    assert.equal(typo.code, 3, typo.stderr);
    assert.match(typo.stderr, /no module "helo" — did you mean "hello"\?.*\[REFUSED\]/);
    const missing = await mesh(["put", "hello", `${build}x`]);
    assert.equal(missing.code, 1, missing.stderr);
    assert.match(missing.stderr, new RegExp(`did you mean "${build}"\\?.*\\[NOT_FOUND\\]`));

    {
      await using mcp = await connectMcpStdio(["--root", root], { name: "self-hosting" });
      const { tools } = await mcp.client.listTools();
      assert.ok(
        tools.some((t) => t.name === `${MeshPart.assigner}__put`),
        tools.map((t) => t.name).join(", "),
      );
      const refused = (await mcp.client.callTool({
        name: `${MeshPart.assigner}__put`,
        arguments: { module: "hello", build: "9-deadbeef" },
      })) as CallToolResult;
      assert.equal(refused.isError, true);
      assert.equal(refused._meta?.["mesh/code"], "NOT_FOUND");
      const lifted = (await mcp.client.callTool({
        name: `${MeshPart.assigner}__unput`,
        arguments: { module: "hello" },
      })) as CallToolResult;
      assert.deepEqual(lifted.structuredContent, { key: "all.hello", lifted: true, others: [] });
      const again = (await mcp.client.callTool({
        name: `${MeshPart.assigner}__unput`,
        arguments: { module: "hello" },
      })) as CallToolResult;
      assert.deepEqual(again.structuredContent, { key: "all.hello", lifted: false, others: [] });
    }
    assert.equal(await puts.get("all.hello"), undefined, "the agent's unput lifted it");

    // Without node-tools on the delivery node the tool is served nowhere: mesh put says so and
    // writes nothing, though the operator's own credential could write the bucket.
    await meshJson(["unassign", "node-tools", "--all"]);
    const unserved = await until(
      async () => {
        const run = await mesh(["put", "hello", build]);
        return run.code === 0 ? undefined : run;
      },
      LONG,
      "mesh put to find no assigner tool",
      explain,
    );
    assert.match(unserved.stderr, /no node serves mesh-assigner\/put.*\[NOT_FOUND\]/);
    assert.equal(await puts.get("all.hello"), undefined);
    await meshJson(["assign", "node-tools", "--all"]);
    await until(
      async () => ((await mesh(["put", "hello", build])).code === 0 ? true : undefined),
      LONG,
      "mesh put served again",
      explain,
    );
    await meshJson(["unput", "hello"]);
  });

  test("mesh up again on the same root resumes the parts: the same builds, nothing registered again, healthy again", async () => {
    await up?.stop();
    const restarted = Date.now();
    up = await startMeshUp({ root, node: HERE, port });
    assert.deepEqual(up.report.delivery, { node: HERE, parts: shipped });
    await partsHealthy(HERE, "the parts healthy again after mesh up resumed", restarted);
    for (const [, part] of PARTS) {
      const { builds } = await meshJson<{ builds: unknown[] }>(["builds", part]);
      assert.equal(builds.length, 1, `${part} has its one build still`);
    }
  });

  test("--delivery-on places delivery on a node that joins, and back here once that node is gone", async () => {
    const rootThere = join(dir, "there");
    there = await joinMeshUp(up as MeshUp, { node: THERE, root: rootThere });
    await up?.stop();
    up = await startMeshUp({ root, node: HERE, port, args: ["--delivery-on", THERE] });
    assert.equal(up.report.delivery?.node, THERE);
    await partsHealthy(THERE, `the parts healthy on ${THERE}`);
    for (const [kind] of PARTS) await pidOf(kind, rootThere);
    await until(
      async () =>
        (await rootProcesses(root)).some((p) => PARTS.some(([k]) => k === p.kind))
          ? undefined
          : true,
      LONG,
      `no part left running on ${HERE}`,
      explain,
    );
    const { put } = await meshJson<{ put: string }>(["put", "hello", (await helloBuild()) ?? ""]);
    assert.ok(put.length > 0, "the assigner's tool answers from there");
    await meshJson(["unput", "hello"]);

    // That node is gone: delivery comes back here with --delivery-on.
    await there.stop();
    there = undefined;
    await up.stop();
    const back = Date.now();
    up = await startMeshUp({ root, node: HERE, port, args: ["--delivery-on", HERE] });
    assert.equal(up.report.delivery?.node, HERE);
    await partsHealthy(HERE, `the parts healthy on ${HERE} again`, back);
    // Delivery works here again: a newly registered module is indexed and built.
    await meshJson(["module", "add", join(EXAMPLES, "counter")]);
    await until(
      async () => ((await helloBuild("counter")) === undefined ? undefined : true),
      LONG,
      "counter built once delivery is back",
      explain,
    );
  });
});

describe("a crashing assigner build (decision 0191)", () => {
  test("a new assigner build that crashes rolls out, is set back by rule 5 while it cannot run the rules itself, and the fleet's other wants are untouched", async () => {
    await using bus = await MeshBus.connectWithFile(up?.report.credentials.operator ?? "");
    const wants = await KvBucket.open(bus, Bucket.wants);
    /** Every want but the assigner's, with its revision: what no rule may have moved. */
    const others = async (): Promise<Record<string, string>> => {
      const out: Record<string, string> = {};
      for (const key of (await wants.keys()).sort()) {
        if (key.endsWith(`.${MeshPart.assigner}`)) continue;
        const e = await wants.get(key);
        if (e !== undefined) out[key] = `${e.value.build} r${e.revision}`;
      }
      return out;
    };
    const shippedBuild = shipped[MeshPart.assigner] ?? "";
    await partsHealthy(HERE, "the parts healthy before the crashing build");
    const before = await others();
    assert.ok(Object.keys(before).length > 0, "the fleet has other wants");

    // The assigner's own folder, its daemon replaced by one that exits at once.
    const folder = join(dir, "crashing-assigner");
    await cp(join(PARTS_SOURCE, MeshPart.assigner), folder, { recursive: true });
    await writeFile(
      join(folder, "src", "main.ts"),
      'process.stderr.write("mesh-assigner: crashing on purpose\\n");\nprocess.exit(1);\n',
    );
    await meshJson(["module", "add", folder]);
    const crashing = await until(
      async () => {
        const run = await mesh(["builds", MeshPart.assigner, "--json"]);
        if (run.code !== 0) return undefined;
        const { builds } = JSON.parse(run.stdout) as {
          builds: Array<{ build: string; status: string }>;
        };
        return builds.find((b) => b.build !== shippedBuild && b.status === "built")?.build;
      },
      LONG,
      "the crashing assigner built by mesh-builder",
      explain,
    );
    // It rolls out like any newest build and crashes; then it is set back to the build it last
    // ran healthy, which runs healthy again.
    const back = await until(
      async () => {
        const c = (await partCells(HERE)).get(MeshPart.assigner);
        return c?.want?.rule === "set-back" &&
          c.want.build === shippedBuild &&
          c.have?.build === shippedBuild &&
          c.state === "healthy"
          ? c
          : undefined;
      },
      LONG,
      "the assigner set back to its shipped build and healthy",
      explain,
    );
    assert.equal(back.want?.build, shippedBuild);
    const reports = (
      await (await KvBucket.open(bus, Bucket.have)).history(`${HERE}.${MeshPart.assigner}`)
    ).map((h) => `${h.value?.build ?? "-"} ${h.value?.health ?? "deleted"}`);
    assert.ok(reports.includes(`${crashing} failing`), `it ran and failed: ${reports.join(", ")}`);
    // The set-back assigner's own passes keep it there, and moved nothing else.
    assert.deepEqual(await others(), before, "the fleet's other wants are untouched");
    const stays = (await wants.get(`${HERE}.${MeshPart.assigner}`))?.value;
    assert.equal(stays?.build, shippedBuild);
    assert.equal(stays?.rule, "set-back");
  });
});

async function helloBuild(module = "hello"): Promise<string | undefined> {
  const run = await mesh(["builds", module, "--json"]);
  if (run.code !== 0) return undefined;
  const { builds } = JSON.parse(run.stdout) as { builds: Array<{ build: string; status: string }> };
  return builds.find((b) => b.status === "built")?.build;
}
