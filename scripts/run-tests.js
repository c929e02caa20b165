#!/usr/bin/env node
// Runs every compiled test file (packages/*/dist/**/*.test.js) with Node's test runner.
// Arguments narrow the run: `npm test -- bus` runs only the bus package's tests.
import { readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

const root = new URL("..", import.meta.url).pathname;
const only = process.argv.slice(2);
const files = [];
for (const pkg of readdirSync(join(root, "packages"))) {
  if (only.length > 0 && !only.includes(pkg)) continue;
  const dist = join(root, "packages", pkg, "dist");
  if (!existsSync(dist)) continue;
  for (const entry of readdirSync(dist, { recursive: true })) {
    if (String(entry).endsWith(".test.js")) files.push(join(dist, String(entry)));
  }
}
if (files.length === 0) {
  console.error("no compiled tests found: run `npm run build` first");
  process.exit(1);
}
files.sort();
// A file's timeout catches a hang, not a slow machine: the end-to-end files run whole meshes
// and take minutes on a loaded one; each waits on its own events with deadlines.
const result = spawnSync(
  process.execPath,
  ["--test", "--test-concurrency=2", "--test-timeout=900000", ...files],
  { stdio: "inherit" },
);
process.exit(result.status ?? 1);
