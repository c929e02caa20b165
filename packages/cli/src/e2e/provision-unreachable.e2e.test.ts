/**
 * Issue 14.6 on a real mesh from `mesh up`: a module's provisioner client not being there is not
 * a refusal. The client is the node's host (it answers `mesh.provision.<node>`); when the host is
 * killed its runtime keeps running, and a module that asks meanwhile gets "no responders". That
 * must reach module code as a timeout from a `get`, and as nothing at all on a watch (the runtime
 * logs it); once the host is back, the next change notice hands the value.
 *
 * To hold the host down for as long as the test needs, `mesh up` is paused (SIGSTOP) before the
 * host is killed, so it does not restart it at once, and resumed (SIGCONT) after. While the host is
 * down the test says the change notice a host says just before it goes away, with the host's own
 * credential; nothing else says one then.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { MeshBus, flush, publish } from "@mesh/bus";
import { provisionChangedSubject } from "@mesh/protocol";
import { meshForFile } from "../testing/mesh-for-file.js";
import { until, type DemoMesh } from "../testing/demo-mesh.js";
import { writeModuleFolder } from "../testing/module-yaml.js";
import { runMesh } from "../testing/run-mesh.js";

const NODE = "unreached-1";
const fx = meshForFile({ prefix: "mesh-unreached", node: NODE, demo: false });

/**
 * `greeter`: its start watches its config `greeting` and keeps every item handed; `handed` says
 * them (with an id drawn when the module loaded, so a reload is seen), `ask` does one `get`.
 */
function greeterModule(): Promise<string> {
  const greeter = {
    module: "greeter",
    description: "Keeps what its greeting's watch hands it.",
    tools: true,
    config: { greeting: { description: "The word it greets with.", default: "Hello" } },
  };
  return writeModuleFolder(fx.sources, greeter, {
    tools: [
      `import { defineModule, defineTool, isToolError, z } from "@mesh/sdk";`,
      `const loaded = Math.random().toString(36).slice(2);`,
      `const handed: string[] = [];`,
      `const said = defineTool({`,
      `  name: "handed",`,
      `  description: "What the greeting's watch handed, in order.",`,
      `  input: z.object({}),`,
      `  output: z.object({ loaded: z.string(), handed: z.array(z.string()) }),`,
      `  handler: () => Promise.resolve({ loaded, handed: [...handed] }),`,
      `});`,
      `const ask = defineTool({`,
      `  name: "ask",`,
      `  description: "Gets the greeting once: its value, or the code it was not answered with.",`,
      `  input: z.object({}),`,
      `  output: z.object({ value: z.string().optional(), code: z.string().optional(), message: z.string().optional() }),`,
      `  handler: async (_input, ctx) => {`,
      `    try {`,
      `      return { value: String(await ctx.provision.get("config", "greeting")) };`,
      `    } catch (error) {`,
      `      return { code: isToolError(error) ? error.code : "not a ToolError", message: String(error) };`,
      `    }`,
      `  },`,
      `});`,
      `export default defineModule({`,
      `  tools: [said, ask],`,
      `  start: (ctx) => {`,
      `    void (async () => {`,
      `      for await (const item of ctx.provision.watch("config", "greeting")) handed.push(JSON.stringify(item));`,
      `    })();`,
      `    return Promise.resolve();`,
      `  },`,
      `});`,
      ``,
    ].join("\n"),
  });
}

async function mesh_(args: readonly string[]): Promise<string> {
  const run = await runMesh([...args, "--root", fx.root]);
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return run.stdout;
}

interface Handed {
  readonly loaded: string;
  readonly handed: readonly string[];
}

async function handed(m: DemoMesh): Promise<Handed | undefined> {
  return (await m.call("greeter", "handed", {}, 10_000)) as Handed | undefined;
}

/** What greeter's watch handed once it has handed more than `before` values. */
function handedMore(m: DemoMesh, before: number, what: string): Promise<Handed> {
  return until(
    async () => {
      const got = await handed(m);
      return got !== undefined && got.handed.length > before ? got : undefined;
    },
    150_000,
    what,
  );
}

/** Every line `mesh logs node-tools` and `mesh logs greeter` keep. */
async function logLines(): Promise<string[]> {
  const lines: string[] = [];
  for (const module of ["node-tools", "greeter"]) {
    const run = await runMesh(["logs", module, "--json", "--root", fx.root]);
    if (run.code !== 0) continue;
    const got = JSON.parse(run.stdout) as { lines: Array<{ line: string }> };
    lines.push(...got.lines.map((l) => l.line));
  }
  return lines;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

describe("a module whose provisioner client is not reachable", () => {
  test("14.6: with its host killed, a get fails as a timeout and a watch is handed no refusal (the runtime logs it); with the host back the next notice hands the value", async () => {
    const m = fx.mesh;
    await mesh_(["module", "add", await greeterModule()]);
    await mesh_(["assign", "greeter", "--all"]);
    const first = await handedMore(m, 0, "greeter's watch to hand its greeting");
    assert.deepEqual(first.handed, [JSON.stringify({ value: "Hello" })]);

    const upPid = m.upPid;
    const [hostPid] = await m.pidsOf("host");
    assert.ok(upPid !== undefined && hostPid !== undefined, "mesh up and its host run");
    // mesh up paused first, so it does not start a new host while the test needs none.
    signal(upPid, "SIGSTOP");
    try {
      signal(hostPid, "SIGKILL");
      await until(
        async () => ((await m.pidsOf("host")).length === 0 ? true : undefined),
        60_000,
        "the host to be gone",
      );
      const asked = (await m.call("greeter", "ask", {}, 30_000)) as
        { value?: string; code?: string; message?: string } | undefined;
      assert.ok(asked !== undefined, "greeter's tools answer while its host is down");
      assert.equal(asked.code, "TIMEOUT", `a get with no client: ${JSON.stringify(asked)}`);
      assert.match(asked.message ?? "", /provisioner client of unreached-1 is not reachable/);

      // The notice a host says as a value moves, said as it goes away: the runtime asks again,
      // and nothing answers.
      const host = await MeshBus.connectWithFile(join(fx.root, "credentials", "host.json"), {
        say: () => undefined,
      });
      try {
        publish(host, provisionChangedSubject(NODE), {
          module: "greeter",
          kind: "config",
          key: "greeting",
        });
        await flush(host);
      } finally {
        await host.close();
      }
    } finally {
      signal(upPid, "SIGCONT");
    }

    // The runtime's log line waits in its output pipe until the new host reads it. On code that
    // hands "no responders" as a refusal, the refusal shows in `handed` instead.
    const outcome = await until(
      async () => {
        const got = await handed(m);
        if (got !== undefined && got.handed.length > 1) return { got, logged: false };
        const lines = await logLines();
        return lines.some((l) =>
          /greeter's watch of its config greeting could not ask again/.test(l),
        )
          ? { got, logged: true }
          : undefined;
      },
      150_000,
      "the runtime to log that it could not ask again, or greeter to be handed something",
      { everyMs: 2_000 },
    );
    assert.deepEqual(
      outcome.got?.handed,
      [JSON.stringify({ value: "Hello" })],
      "no refusal handed to module code",
    );
    assert.equal(outcome.logged, true);
    const logged = (await logLines()).find((l) => /could not ask again/.test(l)) ?? "";
    assert.match(logged, /not reachable/, logged);

    // The host is back: the next notice (a config change) is asked again and its value handed.
    await mesh_(["config", "set", "greeter", "greeting", "Hi"]);
    const after = await handedMore(m, 1, "greeter's watch to hand the new greeting");
    assert.equal(after.loaded, first.loaded, "the same module load: its watch outlived the host");
    assert.deepEqual(after.handed, [
      JSON.stringify({ value: "Hello" }),
      JSON.stringify({ value: "Hi" }),
    ]);
  });
});
