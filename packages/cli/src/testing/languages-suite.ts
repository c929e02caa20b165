/**
 * A Python or a Go module on a real mesh (`mesh up`; decisions 0161, 0162), one file each
 * (languages-python.e2e, languages-go.e2e):
 * examples/modules/hello-python built by mesh-build-python and run under the bridge, and
 * examples/modules/hello-go built by mesh-build-go into a static binary and run directly; each
 * one's tool called from `mesh call` and from the MCP client and listed by `mesh tools` like a
 * TypeScript tool; its config changed live; its secret read from its file; its output in
 * `mesh logs`; a build that crashes at start set back to the build that ran healthy, which keeps
 * answering.
 */
import assert from "node:assert/strict";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { connectMcpStdio } from "./mcp-stdio.js";
import { meshJsonAt, runMesh } from "./run-mesh.js";
import { startMeshUp, type MeshUp } from "./mesh-up.js";
import { statusOf, until as waitUntil } from "./until.js";

export const EXAMPLES = fileURLToPath(new URL("../../../../examples/modules", import.meta.url));
const NODE = "e2e-languages";
/** A Go build from a cold cache takes minutes on a loaded machine. */
export const LONG = 400_000;

/**
 * Each language's example (examples/modules/hello-<language>, which says `<module> serving on
 * <node>` once it serves), a main that exits at once, and what it logs once its greeting changed.
 */
export const LANGUAGES = (
  [
    {
      language: "python",
      main: "main.py",
      crash: 'raise SystemExit("hello-python crashes at start")\n',
      changed: /greeting is now 'Hi'/,
    },
    {
      language: "go",
      main: "main.go",
      crash: 'package main\n\nimport "os"\n\nfunc main() { os.Exit(3) }\n',
      changed: /greeting is now "Hi"/,
    },
  ] as const
).map((l) => ({ ...l, module: `hello-${l.language}` as const }));

let mesh: MeshUp;
let scratch: string;

const mesh0 = (args: readonly string[], stdin?: string): Promise<Record<string, unknown>> =>
  meshJsonAt(mesh.root, args, stdin);

const until = <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> =>
  waitUntil(probe, ms, what, { explain: () => statusOf(mesh.root) });

/** greet's answer, or undefined while nothing answers it. */
async function greet(
  module: string,
  name: string,
): Promise<{ text: string; tokenLength: number } | undefined> {
  const run = await runMesh([
    "call",
    `${module}/greet`,
    JSON.stringify({ name }),
    "--root",
    mesh.root,
  ]);
  return run.code === 0
    ? (JSON.parse(run.stdout) as { text: string; tokenLength: number })
    : undefined;
}

/**
 * The suite of one language on a mesh of its own: a file per language, so a Go build from a
 * cold cache (the standard library compiled again for -trimpath, minutes on a loaded machine)
 * spends its own file's time, not the Python suite's.
 */
export function languageSuite(which: (typeof LANGUAGES)[number]["language"]): void {
  const languages = LANGUAGES.filter((l) => l.language === which);
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "mesh-languages-"));
    mesh = await startMeshUp({ root: join(scratch, "root"), node: NODE });
    for (const { module } of languages) {
      await cp(join(EXAMPLES, module), join(scratch, module), { recursive: true });
      await mesh0(["module", "add", join(scratch, module)]);
      await mesh0(["secret", "set", module, "api-token"], "tok-1234567");
      await mesh0(["assign", module, "--all"]);
    }
  });

  after(async () => {
    await mesh?.stop();
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  });

  for (const { language, module, main, crash, changed } of languages) {
    const serving = new RegExp(`${module} serving on ${NODE}`);
    describe(`a ${language} module on a real mesh`, () => {
      test("built by its build module and run, its tool answers mesh call with its secret read from its file", async () => {
        const answer = await until(() => greet(module, "Ada"), LONG, `${module}'s greet to answer`);
        assert.deepEqual(answer, { text: "Hello, Ada!", tokenLength: "tok-1234567".length });
        const builds = await mesh0(["builds", module]);
        assert.match(JSON.stringify(builds), /"status":"built"/);
        // Bad input is refused by the SDK with the path, as a TypeScript tool's is.
        const bad = await runMesh(["call", `${module}/greet`, "{}", "--root", mesh.root]);
        assert.notEqual(bad.code, 0);
        assert.match(bad.stderr, /input\.name is required \[INVALID_INPUT\]/);
      });

      test("mesh tools lists its tool with its input schema, as TypeScript tools are listed", async () => {
        const listed = await mesh0(["tools"]);
        const tools = listed.tools as Array<{ module: string; tool: string; input?: unknown }>;
        const tool = tools.find((t) => t.module === module && t.tool === "greet");
        assert.ok(tool, JSON.stringify(listed));
        assert.deepEqual((tool.input as { required?: string[] }).required, ["name"]);
      });

      test("the MCP client lists and calls it", async () => {
        await using mcp = await connectMcpStdio(["--root", mesh.root], {
          name: `mesh-${language}-test`,
        });
        const { tools } = await mcp.client.listTools();
        const listed = tools.find((t) => t.name === `${module}__greet`);
        assert.ok(listed, tools.map((t) => t.name).join(", "));
        assert.equal(listed.inputSchema.type, "object");
        const result = (await mcp.client.callTool({
          name: `${module}__greet`,
          arguments: { name: "Grace" },
        })) as CallToolResult;
        assert.equal(result.isError, undefined);
        assert.deepEqual(result.structuredContent, { text: "Hello, Grace!", tokenLength: 11 });
      });

      test("its config changes live (nothing restarts) and its secret is read again from its file", async () => {
        // The process says it serves once per start: as many times after the changes as before.
        const starts = async () =>
          (await runMesh(["logs", module, "--root", mesh.root])).stdout
            .split("\n")
            .filter((line) => serving.test(line)).length;
        const before = await starts();
        assert.ok(before >= 1, `${module} said it serves`);
        await mesh0(["config", "set", module, "greeting", "Hi"]);
        await until(
          async () => ((await greet(module, "Ada"))?.text === "Hi, Ada!" ? true : undefined),
          60_000,
          "greet to say Hi",
        );
        await mesh0(["secret", "set", module, "api-token"], "longer-token-value");
        await until(
          async () =>
            (await greet(module, "Ada"))?.tokenLength === "longer-token-value".length
              ? true
              : undefined,
          60_000,
          "greet to read the new secret",
        );
        const logs = await runMesh(["logs", module, "--root", mesh.root]);
        assert.match(logs.stdout, changed);
        assert.equal(await starts(), before, `${module} started again:\n${logs.stdout}`);
      });

      test("a build that crashes at start is set back to the build that ran healthy, which keeps answering", async () => {
        const wantOf = async () =>
          ((await mesh0(["wants"])) as { wants: Record<string, { build: string; rule: string }> })
            .wants[`${NODE}.${module}`];
        const before = (await wantOf())?.build;
        assert.ok(before);
        // The build to go back to runs healthy (its minimum run time) before the crash comes.
        await until(
          async () =>
            (
              (await mesh0(["wants"])) as {
                cells: Array<{ module: string; health?: string }>;
              }
            ).cells.some((c) => c.module === module && c.health === "healthy")
              ? true
              : undefined,
          LONG,
          `${module} healthy before its crashing build`,
        );
        await writeFile(join(scratch, module, main), crash);
        const setBack = await until(
          async () => {
            const want = await wantOf();
            return want?.rule === "set-back" ? want : undefined;
          },
          LONG,
          `${module} set back`,
        );
        assert.equal(setBack.build, before);
        await until(
          async () => ((await greet(module, "Ada"))?.text === "Hi, Ada!" ? true : undefined),
          LONG,
          "the set-back build to answer again",
        );
      });
    });
  }
}
