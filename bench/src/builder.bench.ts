/**
 * The builder's time for an example module (a tools bundle of a few files with a bundled
 * dependency): the whole build (copy, manifest check, esbuild, reproducible archive, digests)
 * against a bare esbuild of the same entry in the same run.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { buildSource } from "@mesh/delivery";
import { line, quantile, timeEach } from "./measure.js";

const dir = await mkdtemp(join(tmpdir(), "mesh-bench-build-"));
const files: Record<string, string> = {
  "mesh.yaml":
    "module: hello\nbundles:\n  - name: tools\n    language: typescript\n    entrypoints: [src/tools.ts]\n    loads: [src/tools.ts]\n",
  "src/tools.ts":
    'import { greet } from "./greet.js";\nimport { shout } from "./shout.js";\nexport const tools = { greet, shout };\n',
  "src/greet.ts":
    'import { format } from "./format.js";\nexport const greet = (name: string): string => format("Hello", name);\n',
  "src/shout.ts":
    'import { format } from "./format.js";\nexport const shout = (name: string): string => format("HEY", name).toUpperCase();\n',
  "src/format.ts":
    "export const format = (greeting: string, name: string): string => `${greeting}, ${name}!`;\n",
};
for (const [path, text] of Object.entries(files)) {
  await mkdir(join(dir, path, ".."), { recursive: true });
  await writeFile(join(dir, path), text);
}
const out = join(dir, "bare-out");
try {
  const runs = 15;
  const bare = await timeEach(runs, async () => {
    await build({
      absWorkingDir: dir,
      entryPoints: ["src/tools.ts"],
      outdir: out,
      bundle: true,
      platform: "node",
      format: "esm",
      sourcemap: "linked",
      logLevel: "silent",
    });
  });
  const full = await timeEach(runs, async () => {
    const result = await buildSource(dir);
    if (!result.ok) throw new Error(result.log);
  });
  console.log(
    line("build of an example module (p50)", quantile(full, 0.5), "ms", {
      what: "bare esbuild of the same entry",
      value: quantile(bare, 0.5),
    }),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
