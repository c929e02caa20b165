/**
 * `mesh status`, `mesh retry`, `mesh logs` and `mesh conditions` as an operator runs them (`mesh
 * config` is in config.test.ts): the built CLI as a child process with the operator's grant (so
 * every read these verbs make is one the grant allows), against a real bus whose buckets and
 * streams the admin filled.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import type { MeshBus } from "@mesh/bus";
import { KvBucket } from "@mesh/bus";
import { credentialFor, deadline, publishRaw } from "@mesh/bus/testing";
import { fingerprintOf } from "@mesh/core";
import {
  Bucket,
  conditionSubject,
  logsSubject,
  type Condition,
  type LogLine,
  type Manifest,
} from "@mesh/protocol";
import { serveAssignerTools } from "../testing/assigner-tools.js";
import { helloManifest } from "../testing/fixtures.js";
import { operatorBusSuite } from "../testing/operator-bus.js";
import { runMesh, type MeshRun } from "../testing/run-mesh.js";

const MAIN = fileURLToPath(new URL("../main.js", import.meta.url));

const json = <T>(run: MeshRun): T => {
  assert.equal(run.code, 0, run.stderr + run.stdout);
  return JSON.parse(run.stdout) as T;
};

const now = Date.now();
const iso = (msAgo: number) => new Date(now - msAgo).toISOString();
const logLine = (line: string, msAgo: number): LogLine => ({
  process: "runtime",
  stream: "stdout",
  line,
  at: iso(msAgo),
});

/**
 * Two nodes running hello (n1 healthy and present, n2 failing, set back and long gone), an open
 * and an answered ask, twelve conditions and a few log lines of each node.
 */
async function seedFleet(admin: MeshBus, hello: Manifest): Promise<void> {
  await seedNodes(admin, hello);
  await seedAsks(admin);
  await seedStreams(admin);
}

/** n1 healthy and present, n2 failing, set back and long gone. */
async function seedNodes(admin: MeshBus, hello: Manifest): Promise<void> {
  const digest = fingerprintOf(hello);
  await (await KvBucket.open(admin, Bucket.manifests)).put(digest, hello);
  const presence = await KvBucket.open(admin, Bucket.presence);
  const facts = { os: "linux", arch: "x64", version: "0.1.0" };
  // n1 beat a moment ago; n2 last beat ten minutes ago, far beyond three heartbeats.
  await presence.put("n1", {
    node: "n1",
    facts: { hostname: "one", ...facts },
    publicKey: "k1",
    heartbeat: iso(1_000),
  });
  await presence.put("n2", {
    node: "n2",
    facts: { hostname: "two", ...facts },
    publicKey: "k2",
    heartbeat: iso(600_000),
  });
  const wants = await KvBucket.open(admin, Bucket.wants);
  for (const [node, build, rule] of [
    ["n1", "2-b", "newest"],
    ["n2", "1-a", "set-back"],
  ] as const) {
    await wants.put(`${node}.hello`, {
      build,
      manifestDigest: digest,
      fingerprint: "f",
      rule,
      reason: `${rule} for the test`,
    });
  }
  const have = await KvBucket.open(admin, Bucket.have);
  await have.put("n1.hello", {
    build: "2-b",
    fingerprint: "f",
    health: "healthy",
    since: iso(60_000),
    restarts: 0,
  });
  await have.put("n2.hello", {
    build: "2-b",
    fingerprint: "f",
    health: "failing",
    since: iso(60_000),
    restarts: 4,
    lastError: "exit 1",
  });
  await (
    await KvBucket.open(admin, Bucket.differences)
  ).put("n2.hello", {
    want: "1-a",
    have: "2-b",
    reasons: ["n2 runs 2-b, which is failing; set back to 1-a"],
  });
}

/** An open ask and an answered one. */
async function seedAsks(admin: MeshBus): Promise<void> {
  const asks = await KvBucket.open(admin, Bucket.asks);
  for (const id of ["w-open", "w-answered"]) {
    await asks.put(id, {
      id,
      what: `may hello read more (${id})?`,
      module: "hello",
      build: "2-b",
      nodes: ["n1"],
      at: iso(5_000),
    });
  }
  await (
    await KvBucket.open(admin, Bucket.answers)
  ).put("w-answered", { answer: "yes", by: "ada", at: iso(1_000) });
}

/** Twelve conditions, and a few log lines of each node. */
async function seedStreams(admin: MeshBus): Promise<void> {
  // Twelve conditions, one second apart: status shows the newest ten.
  for (let i = 0; i < 12; i++) {
    const condition: Condition = {
      module: i % 2 === 0 ? "hello" : "board",
      name: `c${String(i).padStart(2, "0")}`,
      level: i === 11 ? "error" : "info",
      message: `condition ${i}`,
      node: "n1",
      at: iso((20 - i) * 1_000),
    };
    await publishRaw(
      admin,
      conditionSubject(condition.module, condition.name),
      JSON.stringify(condition),
    );
  }
  for (let i = 1; i <= 5; i++)
    await publishRaw(
      admin,
      logsSubject("n1", "hello"),
      JSON.stringify(logLine(`n1 line ${i}`, 10_000 - i)),
    );
  await publishRaw(admin, logsSubject("n2", "hello"), JSON.stringify(logLine("n2 line 1", 5_000)));
  await publishRaw(
    admin,
    logsSubject("n1", "board"),
    JSON.stringify(logLine("not hello's", 5_000)),
  );
}

describe("the operator's verbs: status, retry, logs, conditions", () => {
  const bus = operatorBusSuite({ name: "operate" }, { before, after });
  let admin: MeshBus;
  let cred: string;

  before(async () => {
    ({ admin, credential: cred } = bus);
    await seedFleet(
      admin,
      helloManifest({
        config: {
          greeting: { description: "how to greet", default: "Hello" },
          times: { default: 1 },
        },
      }),
    );
  });

  test("status --json: a stale heartbeat is gone, modules × nodes, differences, only open asks, ten newest conditions", async () => {
    const report = json<{
      ok: boolean;
      nodes: Array<{ node: string; present: boolean; since: string | null }>;
      modules: Array<{
        node: string;
        module: string;
        want: { build: string; rule: string } | null;
        have: { build: string; restarts: number } | null;
        health: string;
        differs: boolean;
      }>;
      differences: Array<{ node: string; module: string; reasons: string[] }>;
      asks: Array<{ id: string }>;
      conditions: Array<{ name: string; at: string }>;
    }>(await runMesh(["status", "--json", "--credential", cred]));
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.nodes.map((n) => [n.node, n.present]),
      [
        ["n1", true],
        ["n2", false],
      ],
    );
    assert.equal(report.nodes[1]?.since, iso(600_000), "gone since its last heartbeat");
    assert.deepEqual(
      report.modules.map((c) => [
        c.node,
        c.want?.build,
        c.want?.rule,
        c.have?.build,
        c.health,
        c.have?.restarts,
        c.differs,
      ]),
      [
        ["n1", "2-b", "newest", "2-b", "healthy", 0, false],
        ["n2", "1-a", "set-back", "2-b", "failing", 4, true],
      ],
    );
    assert.deepEqual(report.differences[0]?.reasons, [
      "n2 runs 2-b, which is failing; set back to 1-a",
    ]);
    assert.deepEqual(
      report.asks.map((a) => a.id),
      ["w-open"],
    );
    assert.equal(report.conditions.length, 10);
    assert.equal(report.conditions[0]?.name, "c11", "newest first");
    assert.equal(report.conditions[9]?.name, "c02");
  });

  test("status in plain words: aligned columns and health words", async () => {
    const run = await runMesh(["status", "--credential", cred]);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split("\n");
    const header = lines.find((l) => l.includes("HEALTH")) ?? "";
    const column = header.indexOf("HEALTH");
    const rows = lines.filter((l) => /^\s+hello\s+n\d/.test(l));
    assert.equal(rows.length, 2);
    for (const [row, health] of [
      [rows[0], "healthy"],
      [rows[1], "failing"],
    ] as const)
      assert.equal(row?.indexOf(health), column, `${health} under HEALTH in ${row ?? ""}`);
    assert.match(run.stdout, /n2\s+gone/);
    assert.match(run.stdout, /w-open/);
    assert.doesNotMatch(run.stdout, /w-answered/);
  });

  test("status says of every assigned module whether it runs, and if not, why and the command that fixes it", async () => {
    const assignments = await KvBucket.open(admin, Bucket.assignments);
    await assignments.put("all.hello", { by: "ada", at: iso(1_000) });
    try {
      const report = json<{
        modules: Array<{ node: string; state: string; reason: string; fix?: string }>;
        attention: Array<{ node: string; module: string; reason: string; fix?: string }>;
      }>(await runMesh(["status", "--json", "--credential", cred]));
      assert.deepEqual(
        report.modules.map((c) => [c.node, c.state]),
        [
          ["n1", "healthy"],
          ["n2", "not-running"],
        ],
      );
      assert.deepEqual(
        report.attention.map((c) => `${c.node}/${c.module}`),
        ["n2/hello"],
      );
      assert.match(report.attention[0]?.reason ?? "", /n2 is gone/);
      assert.match(report.attention[0]?.fix ?? "", /mesh host --node n2/);
      const plain = await runMesh(["status", "--credential", cred]);
      assert.match(plain.stdout, /NEEDS ATTENTION\n\s+n2\/hello: not running because n2 is gone/);
      assert.match(plain.stdout, /fix: start its host/);
    } finally {
      await assignments.delete("all.hello");
    }
  });

  test("mesh retry lifts a node's failed mark (recording the have revision); unput says where marks stand", async () => {
    const have = await KvBucket.open(admin, Bucket.have);
    const revision = (await have.get("n2.hello"))?.revision ?? 0;
    const builds = await KvBucket.open(admin, Bucket.builds);
    const built = (build: string, candidate: number) =>
      builds.put(`hello.${build}`, {
        module: "hello",
        build,
        status: "built",
        candidate,
        bundles: [],
        log: "",
        timings: { started: iso(0) },
      });
    await built("1-a", 1);
    await built("2-b", 2);
    const puts = await KvBucket.open(admin, Bucket.puts);
    const put = { build: "1-a", by: "test", why: "pinned", at: iso(0) };
    await puts.put("n2.hello", put);
    await puts.put("n1.hello", put);
    // mesh unput asks the assigner's tool (decision 0190), which a runtime of the delivery node serves.
    await using _tools = await serveAssignerTools({
      admin,
      credential: credentialFor(bus.server, bus.server.admin, { node: "delivery", module: "x" }),
      node: "delivery",
    });
    const unput = await runMesh(["unput", "hello", "--node", "n2", "--credential", cred]);
    assert.equal(unput.code, 0, unput.stderr);
    assert.match(unput.stdout, /^lifted the put n2\.hello;/);
    assert.match(unput.stdout, /its puts n1\.hello stand, they hold/, "the other put still holds");
    assert.match(unput.stdout, /except where a failure marks it: n2 \(2-b\)/);
    assert.match(unput.stdout, /mesh retry hello --node n2/);
    await puts.delete("n1.hello");
    // Nothing stands there now: unput says so rather than claiming to lift it.
    const none = await runMesh(["unput", "hello", "--node", "n2", "--credential", cred]);
    assert.match(none.stdout, /^no put stands at n2\.hello, so nothing changes;/);
    // A newer build is not marked: the mark on 2-b keeps nothing from being wanted.
    await built("3-c", 3);
    const newer = await runMesh(["unput", "hello", "--node", "n2", "--credential", cred]);
    assert.doesNotMatch(newer.stdout, /except where/, newer.stdout);
    await builds.delete("hello.3-c");
    const retried = json<{ key: string; haveRevision: number; lifted: Record<string, string[]> }>(
      await runMesh(["retry", "hello", "--node", "n2", "--json", "--credential", cred]),
    );
    assert.equal(retried.key, "n2.hello");
    assert.equal(retried.haveRevision, revision);
    assert.deepEqual(retried.lifted, { n2: ["2-b"] });
    const stored = await (await KvBucket.open(admin, Bucket.retries)).get("n2.hello");
    assert.equal(stored?.value.haveRevision, revision);
    const again = await runMesh(["unput", "hello", "--node", "n2", "--credential", cred]);
    assert.doesNotMatch(again.stdout, /except where/, "the retry lifted the mark");
    const nothing = await runMesh(["retry", "hello", "--node", "n1", "--credential", cred]);
    assert.match(nothing.stdout, /no build of it is marked failing there/);
  });

  test("logs: the last N lines of a module, one node or all; --follow prints new lines until SIGINT", async () => {
    const all = json<{ lines: Array<{ node: string; line: string }> }>(
      await runMesh(["logs", "hello", "--lines", "3", "--json", "--credential", cred]),
    );
    assert.deepEqual(
      all.lines.map((l) => l.line),
      ["n1 line 4", "n1 line 5", "n2 line 1"],
    );
    const n1 = await runMesh(["logs", "hello", "--node", "n1", "--credential", cred]);
    assert.equal(n1.code, 0, n1.stderr);
    assert.match(n1.stdout, /n1 runtime n1 line 1/);
    assert.doesNotMatch(n1.stdout, /n2 line|not hello's/);

    const child = spawn(
      process.execPath,
      [MAIN, "logs", "hello", "--node", "n1", "--lines", "1", "--follow", "--credential", cred],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    // One listener for the child's whole life: output that arrives while no one waits is kept.
    let seen = "";
    const waiters = new Set<() => void>();
    child.stdout.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      for (const wake of waiters) wake();
    });
    const waitFor = (text: string) =>
      deadline(
        new Promise<void>((resolve) => {
          const look = () => {
            if (!seen.includes(text)) return;
            waiters.delete(look);
            resolve();
          };
          waiters.add(look);
          look();
        }),
        20_000,
        `mesh logs --follow printing ${text}`,
      );
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      await waitFor("n1 line 5");
      await publishRaw(admin, logsSubject("n1", "hello"), JSON.stringify(logLine("fresh", 0)));
      await waitFor("fresh");
      assert.doesNotMatch(seen, /n1 line 4/, "only the last --lines before following");
      process.kill(child.pid as number, "SIGINT");
      assert.equal(await deadline(exited, 10_000, "mesh logs --follow ending on SIGINT"), 0);
    } finally {
      // Whatever failed, the child started here does not outlive the test.
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });

  test("conditions: every kept condition newest first, one module's with --module", async () => {
    const all = json<{ conditions: Array<{ name: string }> }>(
      await runMesh(["conditions", "--json", "--credential", cred]),
    );
    assert.equal(all.conditions.length, 12);
    assert.equal(all.conditions[0]?.name, "c11");
    const board = json<{ conditions: Array<{ module: string; name: string }> }>(
      await runMesh(["conditions", "--module", "board", "--json", "--credential", cred]),
    );
    assert.deepEqual(
      board.conditions.map((c) => c.name),
      ["c11", "c09", "c07", "c05", "c03", "c01"],
    );
    const plain = await runMesh(["conditions", "--module", "board", "--credential", cred]);
    assert.match(plain.stdout, /error\s+board\s+c11/);
    const bad = await runMesh(["conditions", "--module", "No", "--json", "--credential", cred]);
    assert.equal(bad.code, 2);
  });
});
