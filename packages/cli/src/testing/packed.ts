/**
 * The installable mesh for tests: `npm run pack` into a temporary folder and the CLI's tarball
 * installed into an empty temporary prefix, and a runner for commands (the installed `mesh`,
 * npm, tsc) that kills what outlives its deadline.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { deadline, reapWithMe } from "@mesh/bus/testing";
import { Env } from "@mesh/protocol";

export const REPO = fileURLToPath(new URL("../../../../", import.meta.url));

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end within the deadline; its process is killed when the deadline passes. */
export function run(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; ms?: number } = {},
): Promise<Run> {
  const child = spawn(file, args, {
    cwd: options.cwd ?? REPO,
    env: { ...process.env, [Env.credential]: "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  reapWithMe(child.pid, { group: false, graceMs: 5_000 });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const ended = new Promise<Run>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
  return deadline(ended, options.ms ?? 300_000, `${file} ${args.join(" ")}`).catch(
    (error: unknown) => {
      if (child.exitCode === null) child.kill("SIGKILL");
      throw error;
    },
  );
}

export function ok(r: Run, what: string): Run {
  assert.equal(r.code, 0, `${what} exited ${String(r.code)}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

export interface Packed extends AsyncDisposable {
  readonly scratch: string;
  readonly tarballs: { readonly cli: string; readonly sdk: string };
  /** The installed `mesh` command. */
  readonly mesh: string;
  /** The environment the installed command runs in (its own code cache). */
  readonly env: NodeJS.ProcessEnv;
}

/** Packs the mesh and installs the CLI's tarball into an empty prefix under a new scratch folder. */
export async function packAndInstall(): Promise<Packed> {
  const scratch = await mkdtemp(join(tmpdir(), "mesh-pack-"));
  try {
    const out = join(scratch, "pack");
    ok(await run(process.execPath, [join(REPO, "scripts", "pack.js"), "--out", out]), "pack");
    const tarballs = JSON.parse(await readFile(join(out, "tarballs.json"), "utf8")) as {
      cli: string;
      sdk: string;
    };
    const prefix = join(scratch, "prefix");
    ok(
      await run("npm", [
        "install",
        "--global",
        "--prefix",
        prefix,
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        tarballs.cli,
      ]),
      "npm install -g the CLI's tarball",
    );
    return {
      scratch,
      tarballs,
      mesh: join(prefix, "bin", "mesh"),
      env: { XDG_CACHE_HOME: join(scratch, "cache"), NODE_PATH: "" },
      [Symbol.asyncDispose]: () => rm(scratch, { recursive: true, force: true }),
    };
  } catch (error) {
    await rm(scratch, { recursive: true, force: true });
    throw error;
  }
}
