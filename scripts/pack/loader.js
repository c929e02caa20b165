#!/usr/bin/env node
// The `mesh` command as one CommonJS bundle (mesh.cjs, scripts/cli-bundle.js) compiled through
// V8's code cache: the first run keeps the compiled code in $XDG_CACHE_HOME/mesh (or
// ~/.cache/mesh) — the repository's bundle keeps it beside itself, in a folder its build
// replaces — and every later run starts without parsing the bundle again, most of a verb's
// start-up cost. A cache that cannot be read or written is no error: the CLI then compiles as
// usual. What escapes a verb is told as one coded line and an exit code, as main.js does.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script, constants } from "node:vm";

/** The repository's build sets this: the cache goes beside the bundle, not in the user's home. */
const CACHE_BESIDE = false;

const filename = fileURLToPath(new URL("./mesh.cjs", import.meta.url));
const source = readFileSync(filename, "utf8");
const key = createHash("sha256")
  .update(`${process.version}\0${process.arch}\0${source}`)
  .digest("hex")
  .slice(0, 32);
const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
const cacheFile = CACHE_BESIDE
  ? join(dirname(filename), "cache", `cli-${key}.v8`)
  : join(cacheHome, "mesh", `cli-${key}.v8`);
let cachedData;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  cachedData = undefined;
}
const wrapped = `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
// import() inside the bundle (esbuild, a module's provided copy) goes to the main ES module loader.
// Node 20 calls that option experimental and says so once; that one warning is not the user's.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) => {
  const text = typeof warning === "string" ? warning : warning?.message;
  if (typeof text === "string" && text.includes("USE_MAIN_CONTEXT_DEFAULT_LOADER")) return;
  emitWarning.call(process, warning, ...rest);
};
const importModuleDynamically = constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
const script = new Script(wrapped, {
  filename,
  ...(cachedData ? { cachedData } : {}),
  ...(importModuleDynamically ? { importModuleDynamically } : {}),
});
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(filename), module, filename, dirname(filename));
const needsCache = cachedData === undefined || script.cachedDataRejected;
const { runCli, reportError } = module.exports;
const escaped = (error) => {
  process.exitCode = reportError(error, process.argv.includes("--json"));
  process.exit();
};
process.on("uncaughtException", escaped);
process.on("unhandledRejection", escaped);
process.exitCode = await runCli(process.argv);
// Made after the verb ran, so the functions it compiled lazily are in the cache too.
if (needsCache) {
  try {
    mkdirSync(dirname(cacheFile), { recursive: true, mode: 0o700 });
    const temporary = `${cacheFile}.${process.pid}.tmp`;
    writeFileSync(temporary, script.createCachedData(), { mode: 0o600 });
    renameSync(temporary, cacheFile);
  } catch {
    // No cache this time; the next run tries again.
  }
}

