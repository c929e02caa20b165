/**
 * Issue 14, cases 3 and 4, on a real mesh from `mesh up --demo`: a daemon that exits at once is
 * said to crash-loop (not `starting`) with its fixes; a first build that crashes stays
 * wanted, failing, and `mesh status` says why and what fixes it, and a fixed build runs by itself;
 * a set-back ends with the healthy build running, `mesh unput` says the mark stands and
 * `mesh retry` lifts it (the newest wanted again, and set back again while it crashes); tool
 * calls that throw are the calls' errors, not the module's health;
 * a put holds while the assigner is killed with kill -9 and started again by its host, with
 * 3,000 puts standing — the put's want is never rewritten.
 */
import assert from "node:assert/strict";
import { cp, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { recordWrites } from "@mesh/bus/testing";
import {
  Bucket,
  nodeModuleKey,
  type Have,
  type RuntimeStatusFile,
  type Want,
} from "@mesh/protocol";
import { meshForFile } from "../testing/mesh-for-file.js";
import { until } from "../testing/demo-mesh.js";
import { runMesh } from "../testing/run-mesh.js";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/modules", import.meta.url));
const NODE = "marks-1";

const fx = meshForFile({ prefix: "mesh-marks", node: NODE });

async function mesh$(args: readonly string[]): Promise<Record<string, unknown>> {
  const run = await runMesh([...args, "--root", fx.root, "--json"]);
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

const bucket = <B extends Bucket>(b: B) => KvBucket.open(fx.mesh.bus, b);

/** The report of `module` on the node once `test` holds for it, within 150 s. */
async function reportOf(module: string, test: (h: Have) => boolean, what: string): Promise<Have> {
  const have = await bucket(Bucket.have);
  return until(
    async () => {
      const h = (await have.get(nodeModuleKey(NODE, module)))?.value;
      return h !== undefined && test(h) ? h : undefined;
    },
    150_000,
    what,
  );
}

async function wantOf(module: string): Promise<Want | undefined> {
  return (await (await bucket(Bucket.wants)).get(nodeModuleKey(NODE, module)))?.value;
}

/** `broken`'s source as a module of its own named `name`, in the given mode. */
async function copyOfBroken(name: string, mode: "crash" | "steady"): Promise<string> {
  const folder = join(fx.sources, name);
  await cp(join(EXAMPLES, "broken"), folder, { recursive: true });
  const yaml = join(folder, "mesh.yaml");
  await writeFile(
    yaml,
    (await readFile(yaml, "utf8")).replace("module: broken", `module: ${name}`),
  );
  await writeFile(join(folder, "src", "mode.json"), `{ "mode": "${mode}" }\n`);
  return folder;
}

describe("failed marks and puts on a real mesh (issue 14)", () => {
  test("a daemon that exits at once is said to crash-loop, between its restarts too: status lists it under attention with its exits, the last exit's reason and the fixes", async () => {
    await mesh$(["module", "add", await copyOfBroken("looper", "crash")]);
    await mesh$(["assign", "looper", "--all"]);
    const have = await bucket(Bucket.have);
    // Every report of looper's: between its first restarts the host says `starting`, and says
    // the exits with it.
    const reports: Have[] = [];
    const ac = new AbortController();
    const watching = (async () => {
      for await (const e of have.watch({ key: nodeModuleKey(NODE, "looper"), signal: ac.signal }))
        if (e.type === "put") reports.push(e.value);
    })().catch(() => undefined);
    try {
      await until(
        async () =>
          ((await have.get(nodeModuleKey(NODE, "looper")))?.value.exits?.inARow ?? 0) >= 2 ||
          undefined,
        150_000,
        "looper to exit twice in a row",
      );
      // On a fleet past 1,000 cells attention comes from the assigner's summary, written at most
      // once a second (decision 0090): it may lag the have just read by that much.
      type Attention = {
        attention: Array<{ node: string; module: string; reason: string; fix?: string }>;
      };
      const cell = await until(
        async () =>
          ((await mesh$(["status"])) as Attention).attention.find(
            (c) => c.module === "looper" && c.node === NODE,
          ),
        60_000,
        "status to list looper under attention",
        { explain: async () => JSON.stringify(await mesh$(["status"])) },
      );
      assert.match(cell.reason, /crash-loops on marks-1: \d+ exits in a row, the last at /);
      assert.match(cell.reason, /exited with code 1/, "the last exit's reason");
      assert.match(cell.fix ?? "", /mesh logs looper --node marks-1/);
      assert.match(cell.fix ?? "", /mesh put looper .* --node marks-1/);
      assert.ok(
        reports.some((r) => r.health === "starting" && (r.exits?.inARow ?? 0) >= 1),
        `between restarts the host reports starting with the exits: ${JSON.stringify(reports)}`,
      );
      const text = await runMesh(["status", "--root", fx.root]);
      assert.match(text.stdout, /NEEDS ATTENTION[\s\S]*looper[\s\S]*crash-loops/);
    } finally {
      ac.abort();
      await watching;
      await mesh$(["unassign", "looper", "--all"]);
    }
  });

  test("a first build that crashes stays wanted and failing, status says why and the fix, and a fixed build runs by itself", async () => {
    // broken's source as a module of its own (the demo runs broken itself, healthy), whose first
    // build crashes: there is no healthy build to go back to.
    const folder = await copyOfBroken("fragile", "crash");
    await mesh$(["module", "add", folder]);
    await mesh$(["assign", "fragile", "--all"]);
    const failing = await reportOf(
      "fragile",
      (h) => h.health === "failing",
      "fragile's first build to be reported failing",
    );
    // The assigner takes the report in: the want stays, now saying what fixes it.
    const kept = await until(
      async () => {
        const w = await wantOf("fragile");
        return w !== undefined && /mesh retry fragile/.test(w.reason) ? w : undefined;
      },
      60_000,
      "the want to stay, saying the fix",
    );
    assert.equal(kept.build, failing.build, "the failing first build stays wanted");
    // Attention may come from the assigner's summary, which may lag the want by a second or so.
    const cell = await until(
      async () =>
        (
          (await mesh$(["status"])) as {
            attention: Array<{ node: string; module: string; reason: string; fix?: string }>;
          }
        ).attention.find((c) => c.module === "fragile" && c.node === NODE),
      60_000,
      "status to list fragile as needing attention",
    );
    assert.match(cell.reason, /crash-loops on marks-1: \d+ exits in a row/);
    assert.match(cell.fix ?? "", /mesh retry fragile --node/);
    // The fix: a steady build, wanted and running without anything else done.
    await writeFile(join(folder, "src", "mode.json"), '{ "mode": "steady" }\n');
    await reportOf(
      "fragile",
      (h) => h.health === "healthy" && h.build !== failing.build,
      "the fixed build to run healthy",
    );
  });

  test("14.3: a set-back ends with the healthy build running and no exit on a stale credential; unput says the mark stands; retry lifts it: the newest is wanted again and, crashing still, set back again", async () => {
    const folder = await copyOfBroken("wobbler", "steady");
    await mesh$(["module", "add", folder]);
    await mesh$(["assign", "wobbler", "--all"]);
    const have = await bucket(Bucket.have);
    const haveOf = async () => (await have.get(nodeModuleKey(NODE, "wobbler")))?.value;
    const good = await until(
      async () => ((await haveOf())?.health === "healthy" ? (await haveOf())?.build : undefined),
      150_000,
      "wobbler's first build healthy",
    );
    await writeFile(join(folder, "src", "mode.json"), '{ "mode": "crash" }\n');
    const setBack = await until(
      async () => {
        const w = await wantOf("wobbler");
        return w?.rule === "set-back" ? w : undefined;
      },
      150_000,
      "the set-back",
    );
    assert.equal(setBack.build, good);
    const bad = /build (\S+) failing/.exec(setBack.reason)?.[1];
    assert.ok(bad !== undefined && bad !== good, setBack.reason);
    await until(
      async () => {
        const h = await haveOf();
        return h?.health === "healthy" && h.build === good ? true : undefined;
      },
      150_000,
      "the set-back to end with the healthy build running",
    );
    // Its credential was valid throughout: no process of wobbler was refused by the bus.
    const logs = await runMesh(["logs", "wobbler", "--lines", "500", "--json", "--root", fx.root]);
    assert.doesNotMatch(logs.stdout, /Authorization Violation|stale or revoked/i);

    const unput = await runMesh(["unput", "wobbler", "--node", NODE, "--root", fx.root]);
    assert.match(
      unput.stdout,
      new RegExp(`^no put stands at ${NODE}\\.wobbler, so nothing changes`),
    );
    assert.match(unput.stdout, new RegExp(`except where a failure marks it: ${NODE} \\(${bad}\\)`));
    assert.match(unput.stdout, new RegExp(`mesh retry wobbler --node ${NODE}`));

    // Every want of wobbler from here on: the retry makes the newest wanted, its crash sets back.
    const wants = await bucket(Bucket.wants);
    const writes = await recordWrites(wants, nodeModuleKey(NODE, "wobbler"), {
      what: "the watch of wobbler's want",
      say: (e) => (e.type === "put" ? `${e.value.rule} ${e.value.build}` : undefined),
    });
    const { written } = writes;
    try {
      const retried = await runMesh(["retry", "wobbler", "--node", NODE, "--root", fx.root]);
      assert.match(
        retried.stdout,
        new RegExp(
          `lifted the failed marks on ${NODE} \\(${bad}\\); the assigner wants the newest build ${bad} there again`,
        ),
      );
      const again = await until(
        () => {
          const i = written.indexOf(`newest ${bad}`);
          const both = i >= 0 && written.slice(i + 1).includes(`set-back ${good}`);
          return Promise.resolve(both ? written : undefined);
        },
        150_000,
        "the newest wanted again, then set back again",
      );
      assert.ok(again.length >= 2, JSON.stringify(again));
      const unputAgain = await runMesh(["unput", "wobbler", "--node", NODE, "--root", fx.root]);
      assert.match(unputAgain.stdout, new RegExp(`marks it: ${NODE} \\(${bad}\\)`), "marked again");
    } finally {
      await writes[Symbol.asyncDispose]();
      await mesh$(["unassign", "wobbler", "--all"]);
    }
  });

  test("14.3: tool calls that throw are the calls' errors (INTERNAL, exit 1), not the module's health: it stays healthy, wanted and unrestarted, and answers the next call", async () => {
    const folder = join(fx.sources, "thrower");
    await cp(join(EXAMPLES, "hello"), folder, { recursive: true });
    const yaml = join(folder, "mesh.yaml");
    await writeFile(
      yaml,
      (await readFile(yaml, "utf8")).replace("module: hello", "module: thrower"),
    );
    await writeFile(
      join(folder, "src", "tools.ts"),
      [
        `import { defineModule, defineTool, z } from "@mesh/sdk";`,
        `const none = z.object({});`,
        `const explode = defineTool({ name: "explode", description: "Throws.", input: none, output: none,`,
        `  handler: () => { throw new Error("kaboom"); } });`,
        `const reject = defineTool({ name: "reject", description: "Rejects.", input: none, output: none,`,
        `  handler: () => Promise.reject(new Error("kaboom")) });`,
        `const ok = defineTool({ name: "ok", description: "Answers.", input: none, output: z.object({ ok: z.boolean() }),`,
        `  handler: () => Promise.resolve({ ok: true }) });`,
        `export default defineModule({ tools: [explode, reject, ok] });`,
        ``,
      ].join("\n"),
    );
    await mesh$(["module", "add", folder]);
    await mesh$(["assign", "thrower", "--all"]);
    const call = (tool: string) =>
      runMesh(["call", `thrower/${tool}`, "{}", "--json", "--root", fx.root]);
    await until(
      async () => ((await call("ok")).code === 0 ? true : undefined),
      150_000,
      "thrower's tools to answer",
    );
    const have = await bucket(Bucket.have);
    const healthy = await reportOf("thrower", (h) => h.health === "healthy", "thrower healthy");
    for (const tool of ["explode", "reject", "explode"]) {
      const run = await call(tool);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(run.stdout + run.stderr, /INTERNAL/);
    }
    // Answered after the throws: a worker a throw had ended would have been restarted first.
    assert.equal((await call("ok")).code, 0);
    const run = join(fx.root, "run");
    const statuses = await Promise.all(
      (await readdir(run))
        .filter((f) => /^node-tools\.\d+\.status\.json$/.test(f))
        .map(async (f) => JSON.parse(await readFile(join(run, f), "utf8")) as RuntimeStatusFile),
    );
    const served = statuses.map((st) => st.modules["thrower"]).filter((m) => m !== undefined);
    assert.ok(served.length > 0, "a runtime serves thrower");
    for (const m of served) {
      assert.equal(m.state, "serving", JSON.stringify(m));
      assert.equal(m.restarts, 0, "its worker was never restarted");
    }
    const after = (await have.get(nodeModuleKey(NODE, "thrower")))?.value;
    assert.equal(after?.health, "healthy");
    assert.equal(after?.build, healthy.build);
    const want = await wantOf("thrower");
    assert.equal(want?.rule, "newest", JSON.stringify(want));
    await mesh$(["unassign", "thrower", "--all"]);
  });

  test("a put holds through kill -9 of the assigner with 3,000 puts standing: its want is never rewritten", async () => {
    const demo = fx.mesh;
    const hello = await until(() => wantOf("hello"), 120_000, "hello wanted");
    await mesh$(["put", "hello", hello.build, "--node", NODE]);
    const wants = await bucket(Bucket.wants);
    await until(
      async () => ((await wantOf("hello"))?.rule === "put" ? true : undefined),
      120_000,
      "the put taken",
    );
    const puts = await bucket(Bucket.puts);
    const other = {
      build: hello.build,
      by: "test",
      why: "many puts",
      at: new Date().toISOString(),
    };
    for (let i = 0; i < 3000; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => puts.put(`x${i + j}.elsewhere`, other)),
      );
    }
    // Every write to the put's want from here on.
    const writes = await recordWrites(wants, nodeModuleKey(NODE, "hello"), {
      what: "the watch of hello's want",
      say: (e) => (e.type === "put" ? `${e.value.rule} ${e.value.build}` : e.type),
    });
    const rewrites = writes.written;
    try {
      for (let round = 1; round <= 2; round++) {
        const [before] = await demo.pidsOf("assigner");
        assert.ok(before !== undefined, "an assigner runs");
        process.kill(before, "SIGKILL");
        await until(
          async () => {
            const now = await demo.pidsOf("assigner");
            return now.length === 1 && now[0] !== before ? true : undefined;
          },
          120_000,
          `the host to start the assigner again (round ${round})`,
        );
        // A change only a running assigner answers: unassigning board deletes its want.
        await mesh$(["unassign", "board", "--all"]);
        await until(
          async () => ((await wantOf("board")) === undefined ? true : undefined),
          120_000,
          `the restarted assigner's passes (round ${round})`,
        );
        await mesh$(["assign", "board", "--all"]);
        await until(() => wantOf("board"), 120_000, `board wanted again (round ${round})`);
      }
      assert.deepEqual(rewrites, [], "the put's want was never rewritten");
      assert.equal((await wantOf("hello"))?.rule, "put");
    } finally {
      await writes[Symbol.asyncDispose]();
      await mesh$(["unput", "hello", "--node", NODE]);
    }
  });
});
