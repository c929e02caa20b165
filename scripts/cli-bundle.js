#!/usr/bin/env node
// The `mesh` command as one CommonJS bundle compiled through V8's code cache (scripts/pack/
// loader.js): most of a verb's start-up is loading and compiling its modules, which the bundle and
// the cache take away. Two uses:
//
// - `npm run pack` (scripts/pack.js) bundles the CLI to ship: `import.meta.url` is the bundle's
//   own file, and `MESH_PACKED` tells the CLI to find what ships beside it there.
// - `npm run build` and scripts/setup.sh (run as `node scripts/cli-bundle.js`) bundle the
//   repository's own: packages/cli/dist/bundle/, which ./mesh runs. Each module's `import.meta.url`
//   stays the file tsc wrote, so every path the CLI derives from it (the processes `mesh up`
//   starts, the view's page, node-tools, the examples) is the checkout's, as with tsc's output.
//   The folder is removed before each build, so a failed build leaves no stale bundle: ./mesh then
//   runs packages/cli/dist/main.js.
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "packages", "cli");

/** Where the repository's bundle is; ./mesh runs `<dir>/mesh.js` when it is there. */
export const REPO_BUNDLE_DIR = join(cli, "dist", "bundle");

/** The host's entry runs itself when it is the main module: never inside the one-file CLI. */
const noSelfRun = {
  name: "no-self-run",
  setup(b) {
    b.onLoad({ filter: /packages\/host\/dist\/main\.js$/ }, async (args) => ({
      contents: (await readFile(args.path, "utf8")).replace(
        /\nif \(import\.meta\.url === `file:\/\/\$\{process\.argv\[1\] \?\? ""\}`\) \{[\s\S]*$/,
        "\n",
      ),
      loader: "js",
    }));
  },
};

/**
 * Each module keeps its own `import.meta`: `define` turns `import.meta.url` (and `resolve`) into
 * names this prepends to each module that mentions it; esbuild keeps every module's top-level
 * names apart, so each module's names are its own file's. Strings that spell `import.meta` (a
 * banner the builder writes into module code) are left as they are.
 */
const ownImportMeta = {
  name: "own-import-meta",
  setup(b) {
    b.onLoad({ filter: /\.m?js$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      if (!text.includes("import.meta")) return undefined;
      const url = JSON.stringify(pathToFileURL(args.path).href);
      const own =
        `const __meshImportMetaUrl = ${url}; ` +
        `const __meshImportMetaResolve = (s) => __meshResolve(${url}, s);`;
      return { contents: `${own}\n${text}`, loader: "js" };
    });
  },
};

/**
 * Bundles the CLI into `<outdir>/mesh.cjs` with the loader as `<outdir>/mesh.js`. `packed`: the
 * shipped command; otherwise the repository's, its code cache kept beside it.
 */
export async function bundleCli({ outdir, packed }) {
  const resolveHelper = packed
    ? 'var __meshResolve = (s) => require("node:url").pathToFileURL(require.resolve(s)).href;'
    : 'var __meshResolve = (from, s) => require("node:url").pathToFileURL(require("node:module").createRequire(from).resolve(s)).href;';
  await build({
    stdin: {
      // Both what the loader runs and how it reports what escapes a verb, as main.js does.
      contents:
        'export { runCli } from "./dist/program.js"; export { reportError } from "./dist/output.js";',
      resolveDir: cli,
      sourcefile: "mesh-entry.js",
    },
    // One CommonJS file (no top-level await, no import.meta), so the loader can compile it
    // through V8's code cache.
    outfile: join(outdir, "mesh.cjs"),
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    minify: true,
    keepNames: true,
    external: ["esbuild", "typescript"],
    define: packed
      ? {
          "process.env.MESH_PACKED": '"1"',
          "import.meta.url": "__meshFileUrl",
          "import.meta.resolve": "__meshResolve",
        }
      : {
          "process.env.MESH_PACKED": '"0"',
          "import.meta.url": "__meshImportMetaUrl",
          "import.meta.resolve": "__meshImportMetaResolve",
        },
    banner: {
      js: [
        'var __meshFileUrl = require("node:url").pathToFileURL(__filename).href;',
        resolveHelper,
      ].join(" "),
    },
    plugins: packed ? [noSelfRun] : [noSelfRun, ownImportMeta],
    logLevel: "warning",
  });
  const loader = await readFile(join(root, "scripts", "pack", "loader.js"), "utf8");
  await writeFile(
    join(outdir, "mesh.js"),
    packed ? loader : loader.replace("const CACHE_BESIDE = false;", "const CACHE_BESIDE = true;"),
    { mode: 0o755 },
  );
}

/** The repository's bundle, made afresh from tsc's output (run `tsc -b` first). */
export async function bundleRepoCli() {
  await rm(REPO_BUNDLE_DIR, { recursive: true, force: true });
  if (!existsSync(join(cli, "dist", "program.js"))) {
    throw new Error("packages/cli/dist/program.js is missing: run `npx tsc -b` first");
  }
  // Made aside and moved in whole, so ./mesh never finds half a bundle.
  const staging = `${REPO_BUNDLE_DIR}.${process.pid}.tmp`;
  await rm(staging, { recursive: true, force: true });
  try {
    await bundleCli({ outdir: staging, packed: false });
    await rename(staging, REPO_BUNDLE_DIR);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    await bundleRepoCli();
  } catch (error) {
    console.error(`cli-bundle: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
