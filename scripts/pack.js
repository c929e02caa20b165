#!/usr/bin/env node
// `npm run pack`: the installable mesh, as two npm tarballs in pack/ (run `npm run build` first).
//
// @mesh/cli: the `mesh` command as one esbuild bundle (dist/mesh.js and its lazily loaded chunks:
// the mesh's own packages and their dependencies inside, only esbuild outside, since it is a
// native binary), the view's page, the runtime module `node-tools` and the examples as folders,
// and the packages the builder needs to build module code (@mesh/sdk and what it and node-tools
// import) as bundled dependencies in node_modules/. Their npm dependencies are the package's.
//
// @mesh/sdk: what module authors install: its compiled entries and types, with @mesh/protocol,
// @mesh/bus (which its types and `@mesh/sdk/process` use) and @mesh/kit (which bus uses) bundled
// inside.
//
// Neither tarball holds a test. Usage: node scripts/pack.js [--out DIR]
import { cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { bundleCli } from "./cli-bundle.js";
import { SHIPPED_PARTS_DIR } from "./parts-bundle.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const outArg = process.argv.indexOf("--out");
const out = outArg > 0 ? process.argv[outArg + 1] : join(root, "pack");
const pkg = (name) => join(root, "packages", name);
const readJson = async (path) => JSON.parse(await readFile(path, "utf8"));

/** The packages module code's build needs beside the SDK (node-tools imports the runtime). */
const BUNDLED_FOR_BUILDS = ["protocol", "kit", "bus", "sdk", "runtime"];

for (const name of ["cli", "sdk", "runtime", "view"]) {
  if (!existsSync(join(pkg(name), "dist"))) {
    console.error(`packages/${name}/dist is missing: run \`npm run build\` first`);
    process.exit(1);
  }
}
if (!existsSync(join(SHIPPED_PARTS_DIR, "index.json"))) {
  console.error(`${SHIPPED_PARTS_DIR} is missing: run \`npm run build\` first`);
  process.exit(1);
}

/** Copies a workspace package's package.json and dist without tests, into `to`. */
async function copyPackage(name, to, { dependencies } = {}) {
  const manifest = await readJson(join(pkg(name), "package.json"));
  await cp(join(pkg(name), "dist"), join(to, "dist"), {
    recursive: true,
    filter: (src) =>
      !/\.test\.(js|d\.ts)(\.map)?$|\/(testing|test-support)(\/|$)|\.tsbuildinfo$/.test(src),
  });
  // The SDK's other languages, which the python and go build modules pack (decisions 0161, 0162).
  const languages = ["python", "go"].filter((dir) => existsSync(join(pkg(name), dir)));
  for (const dir of languages) {
    await cp(join(pkg(name), dir), join(to, dir), {
      recursive: true,
      filter: (src) => !/_test\.go$|__pycache__/.test(src),
    });
  }
  delete manifest.private;
  delete manifest.devDependencies;
  manifest.license = "Apache-2.0";
  manifest.files = ["dist", ...languages, "LICENSE"];
  if (manifest.exports?.["./testing"] !== undefined) delete manifest.exports["./testing"];
  if (dependencies !== undefined) manifest.dependencies = dependencies;
  await writeFile(join(to, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  await cp(join(root, "LICENSE"), join(to, "LICENSE"));
  return manifest;
}

/** Every npm dependency (not @mesh/*) of these packages, with the ranges they declare. */
async function thirdParty(names) {
  const out = {};
  for (const name of names) {
    const { dependencies = {} } = await readJson(join(pkg(name), "package.json"));
    for (const [dep, range] of Object.entries(dependencies)) {
      if (!dep.startsWith("@mesh/")) out[dep] = range;
    }
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Copies npm packages and everything they depend on from the repository's node_modules into
 * `nodeModules`, and returns their names: npm packs a bundled dependency with what is in its
 * folder, so a bundled package's own dependencies must be there too (or they install empty).
 */
async function copyClosure(names, nodeModules, { skip = [] } = {}) {
  const done = new Set();
  const queue = [...names];
  while (queue.length > 0) {
    const name = queue.shift();
    if (done.has(name) || skip.includes(name) || name.startsWith("@mesh/")) continue;
    const from = join(root, "node_modules", name);
    if (!existsSync(from)) throw new Error(`${name} is not installed in node_modules`);
    done.add(name);
    await cp(from, join(nodeModules, name), { recursive: true, dereference: true });
    const { dependencies = {} } = await readJson(join(from, "package.json"));
    queue.push(...Object.keys(dependencies));
  }
  return [...done].sort();
}

/** Each bundled package's exact version, as its dependency range. */
async function versionsOf(nodeModules, names) {
  const out = {};
  for (const name of names)
    out[name] = (await readJson(join(nodeModules, name, "package.json"))).version;
  return out;
}

async function packCli(version) {
  const stage = join(out, "stage-cli");
  await rm(stage, { recursive: true, force: true });
  // One CommonJS bundle through V8's code cache (scripts/cli-bundle.js), import.meta.url its own.
  await bundleCli({ outdir: join(stage, "dist"), packed: true });
  // What the bundle finds beside itself: the view's page, the runtime module and the examples.
  await cp(join(pkg("view"), "static"), join(stage, "static"), { recursive: true });
  await cp(join(pkg("view"), "dist", "browser"), join(stage, "dist", "browser"), {
    recursive: true,
    filter: (src) => !/\.test\.js$/.test(src),
  });
  await cp(join(pkg("runtime"), "node-tools"), join(stage, "node-tools"), {
    recursive: true,
    filter: (src) => !/node_modules|tsconfig\.json$/.test(src),
  });
  // Delivery's parts' manifests: mesh up derives the assigner's and delivery's grants from them.
  await cp(join(pkg("delivery"), "parts"), join(stage, "parts"), { recursive: true });
  // And the parts as prebuilt archives with their builds, which mesh up registers (decision 0190).
  await cp(SHIPPED_PARTS_DIR, join(stage, "shipped-parts"), { recursive: true });
  await cp(join(root, "examples", "modules"), join(stage, "examples", "modules"), {
    recursive: true,
    filter: (src) => !/node_modules|\.mesh$/.test(src),
  });
  for (const name of BUNDLED_FOR_BUILDS) {
    await copyPackage(name, join(stage, "node_modules", "@mesh", name));
  }
  // Everything inside but esbuild, whose binary is the installing machine's own.
  const thirdPartyNames = Object.keys(await thirdParty(BUNDLED_FOR_BUILDS));
  const inside = await copyClosure(thirdPartyNames, join(stage, "node_modules"), {
    skip: ["esbuild", "typescript", "@types/node"],
  });
  const bundled = [...BUNDLED_FOR_BUILDS.map((n) => `@mesh/${n}`), ...inside];
  const dependencies = await versionsOf(join(stage, "node_modules"), bundled);
  const deliveryDeps = (await readJson(join(pkg("delivery"), "package.json"))).dependencies;
  dependencies.esbuild = deliveryDeps.esbuild;
  // The builder's type check reads TypeScript's own lib files, which a bundle cannot carry, and
  // gives the modules it checks Node's types (the examples and node-tools use Node's APIs).
  dependencies.typescript = deliveryDeps.typescript;
  dependencies["@types/node"] = deliveryDeps["@types/node"];
  const cliManifest = await readJson(join(pkg("cli"), "package.json"));
  const manifest = {
    name: "@mesh/cli",
    version,
    description: cliManifest.description,
    license: "Apache-2.0",
    type: "module",
    engines: { node: ">=20.10" },
    bin: { mesh: "dist/mesh.js" },
    files: [
      "dist",
      "static",
      "node-tools",
      "parts",
      "shipped-parts",
      "examples",
      "LICENSE",
      "README.md",
    ],
    dependencies,
    bundleDependencies: bundled,
  };
  await writeFile(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  await cp(join(root, "LICENSE"), join(stage, "LICENSE"));
  await cp(join(root, "README.md"), join(stage, "README.md"));
  return npmPack(stage);
}

async function packSdk() {
  const stage = join(out, "stage-sdk");
  await rm(stage, { recursive: true, force: true });
  const manifest = await copyPackage("sdk", stage);
  for (const name of ["protocol", "kit", "bus"]) {
    await copyPackage(name, join(stage, "node_modules", "@mesh", name));
  }
  const inside = await copyClosure(
    Object.keys(await thirdParty(["sdk", "protocol", "kit", "bus"])),
    join(stage, "node_modules"),
  );
  const bundled = ["@mesh/protocol", "@mesh/kit", "@mesh/bus", ...inside];
  manifest.dependencies = await versionsOf(join(stage, "node_modules"), bundled);
  manifest.bundleDependencies = bundled;
  await writeFile(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return npmPack(stage);
}

function npmPack(stage) {
  const printed = execFileSync("npm", ["pack", "--json", "--pack-destination", out], {
    cwd: stage,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [{ filename, size, entryCount }] = JSON.parse(printed);
  return { file: join(out, filename), size, entries: entryCount };
}

await mkdir(out, { recursive: true });
const { version } = await readJson(join(pkg("cli"), "package.json"));
const cli = await packCli(version);
const sdk = await packSdk();
for (const made of [cli, sdk]) {
  console.log(`${made.file} (${(made.size / 1024).toFixed(0)} KiB, ${made.entries} files)`);
}
await writeFile(
  join(out, "tarballs.json"),
  `${JSON.stringify({ cli: cli.file, sdk: sdk.file }, null, 2)}\n`,
);
