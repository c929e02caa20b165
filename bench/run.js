#!/usr/bin/env node
// Runs the benchmarks: every bench/dist/*.bench.js, or those whose names are given
// (`npm run bench -- composition`). Each prints its own figures against its baseline.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

const dist = new URL("./dist/", import.meta.url).pathname;
const only = process.argv.slice(2);
const files = readdirSync(dist)
  .filter((f) => f.endsWith(".bench.js"))
  .filter((f) => only.length === 0 || only.some((name) => f === `${name}.bench.js`))
  .sort();
if (files.length === 0) {
  console.error("no benchmarks found: run `npm run build` first, or check the name");
  process.exit(1);
}
let failed = 0;
for (const file of files) {
  console.log(`\n== ${file.replace(/\.bench\.js$/, "")}`);
  const result = spawnSync(process.execPath, ["--expose-gc", join(dist, file)], {
    stdio: "inherit",
  });
  if (result.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
