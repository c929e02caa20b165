#!/usr/bin/env node
// The mesh's own parts (mesh-indexer, mesh-builder, mesh-assigner, and the host build mesh-host:
// decision 0200) as the CLI ships them (decision 0190): each part's folder in packages/delivery/parts built as the builder builds any
// module, its source archive with those bundles as prebuilt, and the build `mesh up` registers
// from it, in packages/cli/dist/shipped-parts/ (`npm run pack` copies it into the package). Run by
// `npm run build` and scripts/setup.sh after tsc; skipped when nothing it is made of is newer than
// what it made (`--force` makes it anyway).
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = (name) => join(root, "packages", name);

/** Where the repository's shipped parts are; packages/cli/src/shipped.ts names the same folder. */
export const SHIPPED_PARTS_DIR = join(pkg("cli"), "dist", "shipped-parts");

/** What the parts' bundles are made of: the packages they import, their folders, the lock file. */
const INPUTS = [
  ...["protocol", "kit", "core", "bus", "sdk", "delivery", "host"].map((name) =>
    join(pkg(name), "dist"),
  ),
  join(pkg("delivery"), "parts"),
  join(root, "package-lock.json"),
];

async function newestMtime(path) {
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of await readdir(path, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const m = (await stat(join(entry.parentPath, entry.name)).catch(() => undefined))?.mtimeMs;
    if (m !== undefined && m > newest) newest = m;
  }
  return newest;
}

/** Whether the shipped folder is newer than everything it is made of. */
export async function upToDate(outDir = SHIPPED_PARTS_DIR) {
  const made = (await stat(join(outDir, "index.json")).catch(() => undefined))?.mtimeMs;
  if (made === undefined) return false;
  for (const input of INPUTS) if ((await newestMtime(input)) > made) return false;
  return true;
}

export async function bundleParts({ outDir = SHIPPED_PARTS_DIR, say = () => undefined } = {}) {
  const { shipParts } = await import(
    pathToFileURL(join(pkg("delivery"), "dist", "shipped-parts.js")).href
  );
  return shipParts({ partsDir: join(pkg("delivery"), "parts"), outDir, say });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    if (!process.argv.includes("--force") && (await upToDate())) {
      console.error("parts-bundle: the shipped parts are up to date");
    } else {
      const started = Date.now();
      await bundleParts({ say: (line) => console.error(`parts-bundle: ${line}`) });
      console.error(`parts-bundle: made in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  } catch (error) {
    console.error(`parts-bundle: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
