/**
 * `mesh tools` and `mesh call` as an operator runs them: the CLI as a child process, speaking with
 * the operator's grant, against a real runtime (a worker per module) on a real bus.
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { MeshBus } from "@mesh/bus";
import { deadline, serveEchoOnRacks } from "@mesh/bus/testing";
import { runtimeGrant } from "@mesh/core";
import { Env, RUNTIME_MODULE, type Manifest } from "@mesh/protocol";
import { ModuleState, Runtime } from "@mesh/runtime";
import { startOperatorBus, type OperatorBus } from "../../testing/operator-bus.js";
import { runMesh } from "../../testing/run-mesh.js";

const NODE = "n1";
const MODULE = `
import { defineModule, defineTool, z } from "${import.meta.resolve("@mesh/sdk")}";
export default defineModule({ tools: [
  defineTool({ name: "add", description: "Adds two numbers.",
    input: z.object({ a: z.number(), b: z.number() }), output: z.object({ sum: z.number() }),
    handler: async ({ a, b }) => ({ sum: a + b }) }),
  defineTool({ name: "slow", description: "Finishes when its signal aborts.", input: z.object({}),
    handler: (_i, ctx) => new Promise((_r, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))) }),
] });
`;

describe("mesh tools and mesh call", () => {
  let bus: OperatorBus;
  let dir: string;
  let root: string;
  let credential: string;
  let runtimeBus: MeshBus;
  let runtime: Runtime;

  before(async () => {
    const served = {
      module: "calc",
      states: [],
      reads: [],
      calls: [],
      bundles: [{ name: "tools", language: "typescript", entrypoints: [], loads: ["tools.ts"] }],
    } as unknown as Manifest;
    bus = await startOperatorBus({
      name: "tools",
      node: NODE,
      others: [
        {
          module: RUNTIME_MODULE,
          permissions: runtimeGrant({ node: NODE, modules: [served], owners: {} }).permissions,
        },
      ],
    });
    ({ dir, root, credential } = bus);
    await mkdir(join(dir, "calc"));
    const entry = join(dir, "calc", "tools.mjs");
    await writeFile(entry, MODULE);
    runtimeBus = await MeshBus.connect(bus.loginOf(RUNTIME_MODULE));
    let serving: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (serving = resolve));
    runtime = Runtime.create({
      bus: runtimeBus,
      modules: new Map([["calc", [entry]]]),
      onStatus: (s) => {
        if (s.modules["calc"]?.state === ModuleState.serving) serving();
      },
      log: () => undefined,
    });
    await deadline(ready, 15_000, "calc serving");
  });

  after(async () => {
    await runtime?.stop();
    await runtimeBus?.close();
    await bus?.[Symbol.asyncDispose]();
  });

  test("mesh tools --json lists every tool with its schemas, found under --root", async () => {
    const run = await runMesh(["tools", "--root", root, "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const out = JSON.parse(run.stdout) as {
      ok: boolean;
      tools: Array<{ node: string; module: string; tool: string; input: { properties: object } }>;
    };
    assert.equal(out.ok, true);
    assert.deepEqual(
      out.tools.map((t) => `${t.node}:${t.module}/${t.tool}`),
      ["n1:calc/add", "n1:calc/slow"],
    );
    assert.deepEqual(Object.keys(out.tools[0]?.input.properties ?? {}), ["a", "b"]);
  });

  test("a tool served on many nodes names a few of them and counts the rest, also in --json", async () => {
    const admin = bus.admin;
    const served = await serveEchoOnRacks(admin, 14);
    try {
      const text = await bus.run(["tools", "--module", "echo"]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /on rack-00, .*, rack-09 and 4 more \(14 nodes;/);
      const json = await bus.run(["tools", "--module", "echo", "--json"]);
      const out = JSON.parse(json.stdout) as { tools: Array<{ node: string; nodeCount: number }> };
      assert.equal(out.tools.length, 10);
      assert.ok(out.tools.every((t) => t.nodeCount === 14));
    } finally {
      await Promise.all(served.map((s) => s.stop()));
    }
  });

  test("mesh tools narrows by module and node, and prints plainly", async () => {
    const run = await bus.run(["tools", "--module", "calc", "--node", NODE]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^calc\/add\(a: number, b: number\) → \{ sum: number \} {2}on n1$/m);
    assert.doesNotMatch(run.stdout, /"properties"/, "the schema itself only with --json");
    assert.match(run.stdout, /Adds two numbers\./);
    const none = await bus.run(["tools", "--module", "other"]);
    assert.equal(none.code, 0);
    assert.match(none.stdout, /no tools are served by other/);
  });

  test("mesh call prints the result (credential from MESH_CREDENTIAL)", async () => {
    const run = await runMesh(["call", "calc/add", '{"a":2,"b":40}'], {
      env: {
        [Env.credential]: credential,
      },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { sum: 42 });
    const json = await runMesh(["call", "calc/add", '{"a":1,"b":1}', "--json", "--node", NODE], {
      env: {
        [Env.credential]: credential,
      },
    });
    assert.deepEqual(JSON.parse(json.stdout), {
      ok: true,
      node: NODE,
      module: "calc",
      tool: "add",
      result: { sum: 2 },
    });
  });

  test("mesh call prints a coded error and exits non-zero", async () => {
    const bad = await bus.run(["call", "calc/add", '{"a":"two"}']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /\[INVALID_INPUT\]/);
    assert.match(bad.stderr, /\ba\b.*\bb\b/);
    const slow = await bus.run(["call", "calc/slow", "{}", "--timeout", "300"]);
    assert.notEqual(slow.code, 0);
    assert.match(slow.stderr, /\[TIMEOUT\]/);
    const json = await bus.run(["call", "calc/nothing", "{}", "--json"]);
    assert.notEqual(json.code, 0);
    assert.equal((JSON.parse(json.stdout) as { error: { code: string } }).error.code, "NOT_FOUND");
    const usage = await bus.run(["call", "calc", "{}"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /\[USAGE\]/);
  });
});
