/**
 * The builder's time for an example module (a tools bundle of a few files importing @mesh/sdk,
 * with a typed config): the whole build (copy, manifest check, esbuild, the type check,
 * reproducible archive, digests) against, in the same run, a bare esbuild of the same entry and
 * a bare `tsc --noEmit` over the same files with the same options (a new process, as one would
 * run it by hand). The builder keeps the compiler loaded and the parsed declaration files between
 * builds, so a build after the first is measured apart from the first.
 */
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { build } from "esbuild";
import { buildSource } from "@mesh/delivery";
import { line, quantile, timeEach } from "./measure.js";

const require = createRequire(import.meta.url);
const tsc = join(dirname(require.resolve("typescript/package.json")), "bin", "tsc");
const sdkTypes = require.resolve("@mesh/sdk").replace(/\.js$/, ".d.ts");
const nodeTypes = dirname(dirname(require.resolve("@types/node/package.json")));

const dir = await mkdtemp(join(tmpdir(), "mesh-bench-build-"));
const files: Record<string, string> = {
  "mesh.yaml": [
    "module: hello",
    "bundles:",
    "  - name: tools",
    "    language: typescript",
    "    entrypoints: [src/tools.ts]",
    "    loads: [src/tools.ts]",
    "config:",
    "  greeting: { type: string, default: Hello }",
    "  times: { type: integer, minimum: 1, default: 1 }",
    "",
  ].join("\n"),
  "src/config.ts":
    'import { z } from "@mesh/sdk";\nexport const config = z.object({ greeting: z.string(), times: z.number().int() });\n',
  "src/tools.ts": [
    'import { defineModule } from "@mesh/sdk";',
    'import { config } from "./config.js";',
    'import { greet } from "./greet.js";',
    'import { shout } from "./shout.js";',
    "export default defineModule({ config, tools: [greet, shout] });",
    "",
  ].join("\n"),
  "src/greet.ts": [
    'import { defineTool, z } from "@mesh/sdk";',
    'import { config } from "./config.js";',
    'import { format } from "./format.js";',
    "export const greet = defineTool({",
    '  name: "greet", description: "Greets.", config,',
    "  input: z.object({ name: z.string() }), output: z.object({ text: z.string() }),",
    "  handler: async ({ name }, ctx) => ({",
    '    text: format(await ctx.config.get("greeting"), name).repeat(await ctx.config.get("times")),',
    "  }),",
    "});",
    "",
  ].join("\n"),
  "src/shout.ts": [
    'import { defineTool, z } from "@mesh/sdk";',
    'import { format } from "./format.js";',
    "export const shout = defineTool({",
    '  name: "shout", description: "Shouts.", input: z.object({ name: z.string() }),',
    '  handler: async ({ name }) => ({ text: format("HEY", name).toUpperCase() }),',
    "});",
    "",
  ].join("\n"),
  "src/format.ts":
    "export const format = (greeting: string, name: string): string => `${greeting}, ${name}!`;\n",
  // The builder's strict default, for the bare tsc (which finds the SDK and node's types by path).
  "tsconfig.bare.json": JSON.stringify({
    compilerOptions: {
      strict: true,
      target: "es2022",
      module: "esnext",
      moduleResolution: "bundler",
      lib: ["es2023"],
      resolveJsonModule: true,
      esModuleInterop: true,
      skipLibCheck: true,
      noEmit: true,
      types: ["node"],
      typeRoots: [nodeTypes],
      paths: { "@mesh/sdk": [sdkTypes] },
    },
    files: ["src/tools.ts"],
  }),
};
for (const [path, text] of Object.entries(files)) {
  await mkdir(join(dir, path, ".."), { recursive: true });
  await writeFile(join(dir, path), text);
}
const out = join(dir, "bare-out");
try {
  const esbuildRuns = await timeEach(15, async () => {
    await build({
      absWorkingDir: dir,
      entryPoints: ["src/tools.ts"],
      // Where the builder finds the SDK for a module that does not install it.
      nodePaths: [dirname(nodeTypes)],
      outdir: out,
      bundle: true,
      platform: "node",
      format: "esm",
      sourcemap: "linked",
      logLevel: "silent",
    });
  });
  const tscRuns = await timeEach(5, () => {
    const run = spawnSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.bare.json")], {
      encoding: "utf8",
    });
    if (run.status !== 0) throw new Error(`tsc failed: ${run.stdout}${run.stderr}`);
  });
  const buildOnce = async () => {
    const result = await buildSource(dir);
    if (!result.ok) throw new Error(result.log);
  };
  const [first = Number.NaN] = await timeEach(1, buildOnce);
  const warm = await timeEach(5, buildOnce);
  const p50 = quantile(warm, 0.5);
  const bareTsc = quantile(tscRuns, 0.5);
  const bareEsbuild = quantile(esbuildRuns, 0.5);
  console.log(
    line("type-checked build of an example module (p50)", p50, "ms", {
      what: "bare tsc --noEmit",
      value: bareTsc,
    }),
  );
  console.log(
    line("type-checked build of an example module (p50)", p50, "ms", {
      what: "bare esbuild of the same entry",
      value: bareEsbuild,
    }),
  );
  console.log(
    line("the builder's first build (compiler loaded, libraries parsed)", first, "ms", {
      what: "bare tsc --noEmit",
      value: bareTsc,
    }),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
