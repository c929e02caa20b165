/**
 * How long the `mesh` command takes to start, beside a bare `node -e 0` in the same run: `mesh
 * --help` and `mesh status` (against a mesh brought up with `mesh up --bus-only`), each as the
 * packed command (`npm run pack`: one bundle through V8's code cache, its cache warmed by one run
 * first), as the repository's `./mesh` (scripts/setup.sh's checks, then the bundle `npm run
 * build` makes, its cache warmed likewise) and as tsc's output module by module (what ./mesh
 * falls back to). Runs alternate between the commands, so a busy moment of the machine falls on
 * all of them alike.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { line, quantile } from "./measure.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const RUNS = 15;

const scratch = await mkdtemp(join(tmpdir(), "mesh-startup-"));
const root = join(scratch, "root");
const env = { ...process.env, XDG_CACHE_HOME: join(scratch, "cache"), MESH_CREDENTIAL: "" };

const packOut = join(scratch, "pack");
const packed = spawnSync(process.execPath, [join(REPO, "scripts", "pack.js"), "--out", packOut], {
  stdio: "inherit",
});
if (packed.status !== 0) throw new Error("npm run pack failed; run `npm run build` first");
const packedMain = join(packOut, "stage-cli", "dist", "mesh.js");
const repoMain = join(REPO, "packages", "cli", "dist", "main.js");
const repoCommand = join(REPO, "mesh");
if (!existsSync(join(REPO, "packages", "cli", "dist", "bundle", "mesh.js"))) {
  throw new Error("the CLI bundle is missing: run `npm run build` first");
}
if (!existsSync(packedMain) || !existsSync(repoMain)) throw new Error("nothing to measure");

/** Milliseconds from spawn to exit: `node <args>`, or the file `args[0]` names when not JS. */
function timed(args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const [file, rest] =
      args[0] === repoCommand ? [args[0], args.slice(1)] : [process.execPath, args];
    const child = spawn(file, rest, { env, stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`${args.join(" ")} exited ${String(code)}`));
      else resolve(Number(process.hrtime.bigint() - start) / 1e6);
    });
  });
}

const up = spawn(
  process.execPath,
  [repoMain, "up", "--bus-only", "--root", root, "--json", "--node", "bench"],
  { env, stdio: ["ignore", "pipe", "inherit"] },
);
try {
  await new Promise<void>((resolve, reject) => {
    let out = "";
    up.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('"ok": true')) resolve();
    });
    up.once("exit", (code) => reject(new Error(`mesh up exited ${String(code)}`)));
  });
  const commands: Record<string, readonly string[]> = {
    "node -e 0": ["-e", "0"],
    "packed mesh --help": [packedMain, "--help"],
    "packed mesh status": [packedMain, "status", "--root", root],
    "repo ./mesh --help": [repoCommand, "--help"],
    "repo ./mesh status": [repoCommand, "status", "--root", root],
    "tsc output mesh --help": [repoMain, "--help"],
    "tsc output mesh status": [repoMain, "status", "--root", root],
  };
  // Fill the code caches, as any first run does.
  await timed([packedMain, "status", "--root", root]);
  await timed([repoCommand, "status", "--root", root]);
  const times = new Map<string, number[]>(Object.keys(commands).map((k) => [k, []]));
  for (let i = 0; i < RUNS; i++) {
    for (const [name, args] of Object.entries(commands)) times.get(name)?.push(await timed(args));
  }
  const base = { what: "node -e 0", value: quantile(times.get("node -e 0") ?? [], 0.5) };
  console.log(`start-up, median of ${RUNS} runs each`);
  for (const [name, values] of times) {
    if (name === base.what) continue;
    console.log(`  ${line(name, quantile(values, 0.5), "ms", base)}`);
  }
} finally {
  up.kill("SIGINT");
  await new Promise((resolve) => up.once("exit", resolve));
  await rm(scratch, { recursive: true, force: true });
}
