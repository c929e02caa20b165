/**
 * The files `mesh init` writes: a module that builds as it stands, with a typed config key, a
 * tool and/or a daemon, each with a test that runs with `node --test`.
 */

export interface InitChoice {
  readonly name: string;
  readonly tools: boolean;
  readonly daemon: boolean;
  /** The `@mesh/sdk` dependency as package.json says it (`file:…`). */
  readonly sdk: string;
}

/** Every file of the new module, by its path inside the module's folder. */
export function initFiles(c: InitChoice): Record<string, string> {
  const files: Record<string, string> = {
    "mesh.yaml": manifest(c),
    "package.json": `${JSON.stringify(packageJson(c), null, 2)}\n`,
    "tsconfig.json": `${JSON.stringify(TSCONFIG, null, 2)}\n`,
    ".gitignore": "node_modules/\ndist/\n",
    "README.md": readme(c),
    "src/config.ts": CONFIG_TS,
    "src/greeting.ts": GREETING_TS,
  };
  if (c.tools) {
    files["src/tools.ts"] = TOOLS_TS;
    files["src/tools.test.ts"] = TOOLS_TEST_TS;
  }
  if (c.daemon) {
    files["src/daemon.ts"] = DAEMON_TS;
    files["src/greeting.test.ts"] = GREETING_TEST_TS;
  }
  return files;
}

function manifest(c: InitChoice): string {
  const lines = [
    `module: ${c.name}`,
    `description: ${c.tools && c.daemon ? "Greets, as a tool and as a daemon" : c.tools ? "Greets, as a tool" : "Greets, as a daemon"}, with the configured greeting.`,
    "bundles:",
  ];
  if (c.tools)
    lines.push(
      "  - name: tools",
      "    language: typescript",
      "    entrypoints: [src/tools.ts]",
      "    loads: [src/tools.ts]",
    );
  if (c.daemon)
    lines.push(
      "  - name: daemon",
      "    language: typescript",
      "    entrypoints: [src/daemon.ts]",
      "processes:",
      "  - name: greeter",
      "    bundle: daemon",
    );
  lines.push(
    "config:",
    "  greeting:",
    "    description: The word the module greets with.",
    "    type: string",
    "    minLength: 1",
    "    maxLength: 40",
    "    default: Hello",
  );
  if (c.daemon) lines.push("own-secrets:", "  broker:", "    path: broker.json");
  return `${lines.join("\n")}\n`;
}

function packageJson(c: InitChoice): Record<string, unknown> {
  return {
    name: c.name,
    version: "0.1.0",
    private: true,
    type: "module",
    description: `The mesh module ${c.name}.`,
    scripts: {
      build: "tsc -p .",
      test: "tsc -p . && node --test dist/",
      check: "mesh manifest check .",
    },
    dependencies: { "@mesh/sdk": c.sdk },
    devDependencies: { "@types/node": "^20.19.0", typescript: "~5.9.3" },
  };
}

// Stands alone (no extends): the builder type-checks a copy of this folder with it.
const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    lib: ["ES2023"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
    types: ["node"],
    rootDir: "src",
    outDir: "dist",
  },
  include: ["src"],
};

const CONFIG_TS = `// The module's config, as the manifest declares it (mesh.yaml, config): the builder checks
// that the two agree, and ctx.config / mesh.config are typed by it.
import { z } from "@mesh/sdk";

export const config = z.object({ greeting: z.string() });
`;

const GREETING_TS = `/** What the module says: plain code, tested on its own. */
export function greetingFor(greeting: string, name: string): string {
  return \`\${greeting}, \${name}!\`;
}
`;

const TOOLS_TS = `// The module's tools: the tool runtime loads this file (mesh.yaml, loads) and serves each tool
// at mesh.tools.<node>.<module>.<tool>. \`mesh call <module>/greet '{"name":"Ada"}'\` calls it.
import { defineModule, defineTool, z } from "@mesh/sdk";
import { config } from "./config.js";
import { greetingFor } from "./greeting.js";

export const greet = defineTool({
  name: "greet",
  description: "Greets someone by name with the configured greeting.",
  input: z.object({ name: z.string().min(1).max(100).describe("Who to greet") }),
  output: z.object({ text: z.string() }),
  config,
  handler: async ({ name }, ctx) => ({
    text: greetingFor(await ctx.config.get("greeting"), name),
  }),
});

export default defineModule({ config, tools: [greet] });
`;

const TOOLS_TEST_TS = `// The tools without a mesh: @mesh/sdk/testing runs them as the runtime would.
import assert from "node:assert/strict";
import { test } from "node:test";
import { testModule } from "@mesh/sdk/testing";
import module from "./tools.js";

test("greet answers with the configured greeting", async () => {
  const mesh = testModule(module, { config: { greeting: "Hello" } });
  assert.deepEqual(await mesh.call("greet", { name: "Ada" }), { text: "Hello, Ada!" });
  mesh.setConfig("greeting", "Hi");
  assert.deepEqual(await mesh.call("greet", { name: "Ada" }), { text: "Hi, Ada!" });
});

test("greet refuses an empty name", async () => {
  const mesh = testModule(module, { config: { greeting: "Hello" } });
  await assert.rejects(mesh.call("greet", { name: "" }), /INVALID_INPUT|does not match/);
});
`;

const DAEMON_TS = `// The module's daemon: a process the host runs with the module's own bus credential
// (own-secrets: broker) and starts again when it exits. It reads and watches its config as the
// module, says a condition operators see, and stops cleanly on SIGTERM.
import { connectProcess } from "@mesh/sdk/process";
import { config } from "./config.js";
import { greetingFor } from "./greeting.js";

const mesh = await connectProcess({ config });
let greeting = await mesh.config.get("greeting");
await mesh.condition("greeting", "info", greetingFor(greeting, mesh.node));

const watching = (async () => {
  for await (const item of mesh.config.watch("greeting")) {
    if (!("value" in item) || item.value === greeting) continue;
    greeting = item.value;
    process.stdout.write(\`the greeting is now \${greeting}\\n\`);
    await mesh.condition("greeting", "info", greetingFor(greeting, mesh.node));
  }
})();

const stop = (): void => {
  void mesh.close().finally(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
await watching;
`;

const GREETING_TEST_TS = `import assert from "node:assert/strict";
import { test } from "node:test";
import { greetingFor } from "./greeting.js";

test("the daemon's greeting names the node", () => {
  assert.equal(greetingFor("Hello", "n1"), "Hello, n1!");
});
`;

function readme(c: InitChoice): string {
  return `# ${c.name}

A mesh module${c.tools ? ` with a tool (\`${c.name}/greet\`)` : ""}${c.tools && c.daemon ? " and" : ""}${c.daemon ? " with a daemon (the process `greeter`)" : ""}, made by \`mesh init\`.

\`\`\`sh
npm install && npm test          # type-check and run the tests (node --test)
mesh manifest check .            # the manifest, every problem at once
mesh module add . && mesh assign ${c.name} --all
${c.tools ? `mesh call ${c.name}/greet '{"name":"Ada"}'\n` : ""}mesh config set ${c.name} greeting Hi   # live; a value that breaks the declared type is refused
\`\`\`

- \`mesh.yaml\`: what the mesh builds and runs, and the config key \`greeting\` with its type.
- \`src/config.ts\`: the same config as a zod schema; the build fails when the two disagree.
${c.tools ? "- `src/tools.ts`: the tool; `src/tools.test.ts` runs it without a mesh.\n" : ""}${c.daemon ? "- `src/daemon.ts`: the daemon; it reads and watches its config with `@mesh/sdk/process`.\n" : ""}
The module author's guide in the mesh's repository (docs/modules.md) says the rest.
`;
}
